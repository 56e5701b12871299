// The layer registry: YAML `type:` -> constructor. Each layer's file adds
// its types (reading its keys with LayerArgs) in an add_*_layer function;
// register_builtin_layers calls them all, in the list below (no static
// initializers: a static library's unreferenced objects would be dropped).
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
    // `keys`: the parameters the type takes (besides name and inputs).
    void add(const std::string& type, std::vector<std::string> keys, LayerFactory factory) {
        factories_[type] = {std::move(keys), std::move(factory)};
    }
    std::vector<std::string> types() const;
    // Throws ConfigError for an unknown type, listing the known ones. With
    // `resolved`, fills it with the parameters the layer took, defaults
    // included (LayerArgs::resolved).
    std::unique_ptr<Layer> create(const config::LayerSpec& spec, int index,
                                  std::vector<std::pair<std::string, std::string>>* resolved = nullptr) const;

private:
    struct Entry {
        std::vector<std::string> keys;
        LayerFactory factory;
    };
    std::map<std::string, Entry> factories_;
};

void register_builtin_layers(LayerRegistry& registry);

// The layers' own files (one line each for a new layer).
void add_flatten_layer(LayerRegistry& registry);            // flatten.cpp
void add_dense_layer(LayerRegistry& registry);              // dense.cpp
void add_activation_layers(LayerRegistry& registry);        // activation_layer.cpp
void add_dropout_layer(LayerRegistry& registry);            // dropout.cpp
void add_merge_layers(LayerRegistry& registry);             // merge.cpp
void add_conv2d_layer(LayerRegistry& registry);             // conv2d.cpp
void add_pool2d_layers(LayerRegistry& registry);            // pool2d.cpp
void add_global_avg_pool2d_layer(LayerRegistry& registry);  // global_avg_pool2d.cpp
void add_batch_norm_layer(LayerRegistry& registry);         // batch_norm.cpp
void add_reshape_layer(LayerRegistry& registry);            // reshape.cpp
void add_attention_layer(LayerRegistry& registry);          // attention.cpp
void add_layer_norm_layers(LayerRegistry& registry);        // layer_norm.cpp
void add_embedding_layers(LayerRegistry& registry);         // embedding.cpp

// The registry with every built-in layer (built once, read-only afterwards).
const LayerRegistry& builtin_layers();

}  // namespace gputrain::nn
