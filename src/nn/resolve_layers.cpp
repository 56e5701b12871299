#include "nn/resolve_layers.hpp"

#include <exception>

#include "config/load.hpp"
#include "config/resolved_yaml.hpp"
#include "core/error.hpp"
#include "nn/graph.hpp"
#include "nn/layer_names.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

void resolve_layers(config::RunConfig& cfg) {
    LayerNamer namer(cfg.model.layers);
    std::vector<std::string> names;
    for (size_t i = 0; i < cfg.model.layers.size(); ++i) {
        auto& spec = cfg.model.layers[i];
        builtin_layers().create(spec, static_cast<int>(i), &spec.resolved_params);
        spec.resolved_name = namer.name(spec, static_cast<int>(i));
        names.push_back(spec.resolved_name);
    }
    // Inputs by name, written only where they are not the layer before.
    const LayerGraph graph = link_layers(cfg.model.layers, names);
    for (size_t i = 0; i < cfg.model.layers.size(); ++i) {
        auto& spec = cfg.model.layers[i];
        spec.resolved_inputs.clear();
        const auto& inputs = graph.inputs[i];
        if (inputs.size() == 1 && inputs[0] == static_cast<int>(i)) continue;
        for (int t : inputs) spec.resolved_inputs.push_back(graph.tensor_name(t, names));
    }
    if (cfg.digest_of_layers_as_given.empty()) cfg.digest_of_layers_as_given = cfg.digest;
    cfg.resolved_yaml = config::resolved_yaml(cfg);
    cfg.digest = config::config_digest(cfg);
}

std::string resolved_again(const std::string& yaml) {
    try {
        config::RunConfig earlier = config::load_from_string(yaml, "the earlier config");
        resolve_layers(earlier);
        return earlier.resolved_yaml;
    } catch (const std::exception&) {  // ConfigError, or anything else an untrusted text brings
        return yaml;
    }
}

}  // namespace gputrain::nn
