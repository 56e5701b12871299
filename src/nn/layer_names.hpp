// Layer names, Keras' way: a layer's own `name:`, or its type numbered when
// repeated (dense, dense_1, ...), skipping the names other layers give
// themselves. Checkpoints name tensors LAYER/PARAM, so a name is UTF-8, holds
// no '/' and is unique within the model.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace gputrain::nn {

class LayerNamer {
public:
    // `layers`: all of the model's, so that an auto name never takes a name
    // that a later layer gives itself (config.yaml names every layer, and a
    // layer inserted into a copy of it must not clash).
    explicit LayerNamer(const std::vector<config::LayerSpec>& layers);

    // The name of layer `index` (called for each layer in order); throws
    // ConfigError at the layer's `name:` for a bad or repeated name.
    std::string name(const config::LayerSpec& spec, int index);

private:
    std::set<std::string> given_;  // the names layers give themselves
    std::map<std::string, int> type_counts_;
    std::set<std::string> names_;  // the names taken so far
};

}  // namespace gputrain::nn
