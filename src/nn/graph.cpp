#include "nn/graph.hpp"

#include <map>

#include "core/suggest.hpp"
#include "nn/layer_args.hpp"

namespace gputrain::nn {

bool LayerGraph::is_chain() const {
    for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].size() != 1 || inputs[i][0] != static_cast<int>(i)) return false;
    return true;
}

namespace {

// A path of inputs from layer `from` back to layer `to` (both included), or empty.
bool find_path(const std::vector<std::vector<int>>& inputs, int from, int to, std::vector<int>& path,
               std::vector<char>& seen) {
    path.push_back(from);
    if (from == to) return true;
    if (!seen[static_cast<size_t>(from)]) {
        seen[static_cast<size_t>(from)] = 1;
        for (int t : inputs[static_cast<size_t>(from)])
            if (t > 0 && find_path(inputs, t - 1, to, path, seen)) return true;
    }
    path.pop_back();
    return false;
}

}  // namespace

LayerGraph link_layers(const std::vector<config::LayerSpec>& specs, const std::vector<std::string>& names) {
    LayerGraph g;
    const int n = static_cast<int>(specs.size());
    std::map<std::string, int> index;
    for (int i = 0; i < n; ++i) index[names[static_cast<size_t>(i)]] = i;
    g.inputs.resize(specs.size());
    for (int i = 0; i < n; ++i) {
        const auto& spec = specs[static_cast<size_t>(i)];
        if (spec.inputs.empty()) {
            g.inputs[static_cast<size_t>(i)].push_back(i);  // the layer before (tensor i), or the input for i = 0
            continue;
        }
        for (const auto& in : spec.inputs) {
            int layer = in.layer;
            if (layer == config::LayerInput::kByName) {
                if (in.name == "input") {
                    layer = -1;
                } else {
                    auto it = index.find(in.name);
                    if (it == index.end()) {
                        std::vector<std::string> known{"input"};
                        for (int j = 0; j < i; ++j) known.push_back(names[static_cast<size_t>(j)]);
                        LayerArgs(spec, i).fail("inputs", "unknown layer '" + in.name + "'" +
                                                              did_you_mean(in.name, known) +
                                                              "; name a layer listed above it, or 'input'");
                    }
                    layer = it->second;
                }
            }
            g.inputs[static_cast<size_t>(i)].push_back(layer + 1);
        }
    }
    // Order: every input made before its reader; a later one is a cycle or a misplaced layer.
    for (int i = 0; i < n; ++i)
        for (int t : g.inputs[static_cast<size_t>(i)]) {
            const int j = t - 1;
            if (j < i) continue;
            const auto& spec = specs[static_cast<size_t>(i)];
            const std::string me = names[static_cast<size_t>(i)];
            if (j == i) LayerArgs(spec, i).fail("inputs", "layer '" + me + "' reads its own output; a model has no cycles");
            std::vector<int> path;
            std::vector<char> seen(specs.size(), 0);
            if (find_path(g.inputs, j, i, path, seen)) {
                std::string chain = me, implicit;
                for (int k : path) {
                    chain += " <- " + names[static_cast<size_t>(k)];
                    // A layer without inputs: reads the one listed before it,
                    // which the config does not show.
                    if (k != i && specs[static_cast<size_t>(k)].inputs.empty())
                        implicit += (implicit.empty() ? "" : ", ") + ("'" + names[static_cast<size_t>(k)] + "'");
                }
                if (!implicit.empty())
                    chain += " (" + implicit + " without inputs: read" +
                             (implicit.find(',') == std::string::npos ? "s" : "") + " the layer listed before it)";
                LayerArgs(spec, i).fail("inputs", "a cycle: " + chain + "; a model has no cycles");
            }
            LayerArgs(spec, i).fail("inputs", "reads '" + names[static_cast<size_t>(j)] +
                                                  "', which is listed after it; list every layer after the layers "
                                                  "it reads");
        }
    g.readers.assign(specs.size() + 1, {});
    for (int i = 0; i < n; ++i)
        for (int t : g.inputs[static_cast<size_t>(i)]) g.readers[static_cast<size_t>(t)].push_back(i);
    for (int i = 0; i + 1 < n; ++i)
        if (g.readers[static_cast<size_t>(i + 1)].empty())
            LayerArgs(specs[static_cast<size_t>(i)], i)
                .fail("", "layer '" + names[static_cast<size_t>(i)] +
                              "': its output is read by no layer, and a model has one output, its last layer ('" +
                              names.back() + "'); read it with another layer's inputs: or remove it");
    return g;
}

}  // namespace gputrain::nn
