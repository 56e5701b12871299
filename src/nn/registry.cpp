#include "nn/registry.hpp"

#include "core/error.hpp"
#include "core/suggest.hpp"
#include "nn/activation_layer.hpp"
#include "nn/dense.hpp"
#include "nn/dropout.hpp"
#include "nn/flatten.hpp"

namespace gputrain::nn {

std::vector<std::string> LayerRegistry::types() const {
    std::vector<std::string> out;
    for (const auto& [type, factory] : factories_) out.push_back(type);
    return out;
}

std::unique_ptr<Layer> LayerRegistry::create(const config::LayerSpec& spec, int index) const {
    LayerArgs args(spec, index);
    auto it = factories_.find(spec.type);
    if (it == factories_.end())
        args.fail("type", "unknown layer type '" + spec.type + "'" + did_you_mean(spec.type, types()) +
                              "; known types: " + join_names(types()));
    return it->second(args);
}

void register_builtin_layers(LayerRegistry& registry) {
    registry.add("flatten", [](LayerArgs& args) -> std::unique_ptr<Layer> {
        args.finish({});
        return std::make_unique<Flatten>();
    });
    registry.add("dense", [](LayerArgs& args) -> std::unique_ptr<Layer> {
        const int64_t units = args.positive_int("units");
        const std::string act_name = args.word("activation", "linear");
        Activation act;
        if (!parse_activation(act_name, act))
            args.fail("activation", "unknown activation '" + act_name + "'" +
                                        did_you_mean(act_name, activation_names()) +
                                        "; known: " + join_names(activation_names()));
        const bool use_bias = args.flag("use_bias", true);
        args.finish({"units", "activation", "use_bias"});
        return std::make_unique<Dense>(units, act, use_bias);
    });
    for (const auto& act_name : activation_names()) {
        Activation act;
        parse_activation(act_name, act);
        if (act == Activation::linear) continue;
        registry.add(act_name, [act](LayerArgs& args) -> std::unique_ptr<Layer> {
            args.finish({});
            return std::make_unique<ActivationLayer>(act);
        });
    }
    registry.add("dropout", [](LayerArgs& args) -> std::unique_ptr<Layer> {
        if (!args.has("rate")) args.fail("rate", "missing; give the fraction to drop, e.g. rate: 0.2");
        const double rate = args.number("rate", 0.0, 0.0, 1.0);
        args.finish({"rate"});
        return std::make_unique<Dropout>(static_cast<float>(rate));
    });
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
