#include "nn/registry.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/suggest.hpp"

namespace gputrain::nn {

std::vector<std::string> LayerRegistry::types() const {
    std::vector<std::string> out;
    for (const auto& [type, factory] : factories_) out.push_back(type);
    return out;
}

std::unique_ptr<Layer> LayerRegistry::create(const config::LayerSpec& spec, int index,
                                             std::vector<std::pair<std::string, std::string>>* resolved) const {
    LayerArgs args(spec, index);
    auto it = factories_.find(spec.type);
    if (it == factories_.end())
        args.fail("type", "unknown layer type '" + spec.type + "'" + did_you_mean(spec.type, types()) +
                              "; known types: " + join_names(types()));
    args.set_known(it->second.keys);
    // `trainable` (Keras' attribute): a key of the layers with weights (the
    // others call it unknown). Read only when given, so the resolved config
    // (and its digest) of a layer without it stays as it was.
    const auto& keys = it->second.keys;
    const bool takes_trainable = std::find(keys.begin(), keys.end(), "trainable") != keys.end();
    const bool trainable = !takes_trainable || !args.has("trainable") || args.flag("trainable", true);
    // lr_multiplier (per-layer learning rates, as a PyTorch parameter group's
    // lr): read the same way, only when given.
    double lr_multiplier = 1.0;
    if (takes_trainable && args.has("lr_multiplier")) {
        lr_multiplier = args.number("lr_multiplier", 1.0, -HUGE_VAL, HUGE_VAL);
        if (!(lr_multiplier > 0.0) || !std::isfinite(lr_multiplier))
            args.fail("lr_multiplier", "must be a number above 0 (the factor on the learning rate, e.g. lr_multiplier: 64)");
        if (!trainable) args.fail("lr_multiplier", "the layer is frozen (trainable: false): remove one of the two");
    }
    std::unique_ptr<Layer> layer = it->second.factory(args);
    layer->set_frozen(!trainable);
    layer->set_lr_multiplier(lr_multiplier);
    if (resolved) *resolved = args.resolved();
    return layer;
}

void register_builtin_layers(LayerRegistry& registry) {
    add_flatten_layer(registry);
    add_dense_layer(registry);
    add_activation_layers(registry);
    add_dropout_layer(registry);
    add_merge_layers(registry);
    add_conv2d_layer(registry);
    add_pool2d_layers(registry);
    add_global_avg_pool2d_layer(registry);
    add_batch_norm_layer(registry);
    add_reshape_layer(registry);
    add_attention_layer(registry);
    add_layer_norm_layers(registry);
    add_embedding_layers(registry);
}

const LayerRegistry& builtin_layers() {
    static const LayerRegistry registry = [] {
        LayerRegistry r;
        register_builtin_layers(r);
        return r;
    }();
    return registry;
}

}  // namespace gputrain::nn
