// Layer names, Keras' way: a layer's own `name:`, or its type numbered when
// repeated (dense, dense_1, ...). Checkpoints name tensors LAYER/PARAM, so a
// name holds no '/' and is unique within the model.
#pragma once

#include <map>
#include <set>
#include <string>

#include "config/run_config.hpp"

namespace gputrain::nn {

class LayerNamer {
public:
    // The name of layer `index` (called for each layer in order); throws
    // ConfigError at the layer's `name:` for a bad or repeated name.
    std::string name(const config::LayerSpec& spec, int index);

private:
    std::map<std::string, int> type_counts_;
    std::set<std::string> names_;
};

}  // namespace gputrain::nn
