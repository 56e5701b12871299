#include "nn/layer_names.hpp"

#include <algorithm>

#include "core/utf8.hpp"
#include "nn/layer_args.hpp"

namespace gputrain::nn {

LayerNamer::LayerNamer(const std::vector<config::LayerSpec>& layers) {
    for (const auto& spec : layers)
        if (!spec.name.empty()) given_.insert(spec.name);
}

std::string LayerNamer::name(const config::LayerSpec& spec, int index) {
    std::string name = spec.name;
    if (name.empty()) {
        const int n = type_counts_[spec.type]++;
        name = n == 0 ? spec.type : spec.type + "_" + std::to_string(n);
        while (names_.count(name) || given_.count(name)) name = spec.type + "_" + std::to_string(type_counts_[spec.type]++);
    } else if (name.front() == '/' || name.back() == '/' || name.find("//") != std::string::npos ||
               std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
        // Checkpoints name tensors LAYER/PARAM (and optimizer/adam_m/LAYER/PARAM);
        // '/' only separates the scopes of blocks (stage2/block1/conv2d).
        LayerArgs(spec, index).fail("name", "control characters and a '/' at either end or twice in a row are not "
                                            "allowed in a layer name; use letters, digits, '_', '-' or '.'");
    } else if (name.rfind("optimizer/", 0) == 0) {
        // Checkpoints keep optimizer state as optimizer/SLOT/LAYER/PARAM: a layer there would collide with it.
        LayerArgs(spec, index).fail("name", "a layer name may not start with 'optimizer/' (checkpoints keep the "
                                            "optimizer's state under it); give the layer another name");
    } else if (name == "input") {
        LayerArgs(spec, index).fail("name", "'input' names the model's input (inputs: input); give the layer "
                                            "another name");
    } else if (as_utf8(name) != name) {
        // Checkpoint tensor names are JSON strings: a Latin-1 byte would fail the first checkpoint, after an epoch.
        LayerArgs(spec, index).fail("name", "is not valid UTF-8; save the config as UTF-8");
    } else if (names_.count(name)) {
        LayerArgs(spec, index).fail("name", "duplicate layer name '" + name + "'; names must be unique");
    }
    names_.insert(name);
    return name;
}

}  // namespace gputrain::nn
