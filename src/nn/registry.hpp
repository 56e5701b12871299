// The layer registry: YAML `type:` -> constructor. Filled explicitly by
// register_builtin_layers (no static initializers).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/layer.hpp"
#include "nn/layer_args.hpp"

namespace gputrain::nn {

using LayerFactory = std::function<std::unique_ptr<Layer>(LayerArgs&)>;

class LayerRegistry {
public:
    void add(const std::string& type, LayerFactory factory) { factories_[type] = std::move(factory); }
    std::vector<std::string> types() const;
    // Throws ConfigError for an unknown type, listing the known ones. With
    // `resolved`, fills it with the parameters the layer took, defaults
    // included (LayerArgs::resolved).
    std::unique_ptr<Layer> create(const config::LayerSpec& spec, int index,
                                  std::vector<std::pair<std::string, std::string>>* resolved = nullptr) const;

private:
    std::map<std::string, LayerFactory> factories_;
};

void register_builtin_layers(LayerRegistry& registry);

// The registry with every built-in layer (built once, read-only afterwards).
const LayerRegistry& builtin_layers();

}  // namespace gputrain::nn
