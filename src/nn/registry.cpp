#include "nn/registry.hpp"

#include "core/error.hpp"
#include "core/suggest.hpp"
#include "nn/activation_layer.hpp"
#include "nn/batch_norm.hpp"
#include "nn/conv2d.hpp"
#include "nn/dense.hpp"
#include "nn/dropout.hpp"
#include "nn/flatten.hpp"
#include "nn/global_avg_pool2d.hpp"
#include "nn/merge.hpp"
#include "nn/pool2d.hpp"
#include "nn/reshape.hpp"

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
    std::unique_ptr<Layer> layer = it->second(args);
    if (resolved) *resolved = args.resolved();
    return layer;
}

namespace {

Padding read_padding(LayerArgs& args) {
    return args.choice("padding", "valid", {"same", "valid"}) == "same" ? Padding::same : Padding::valid;
}

void register_image_layers(LayerRegistry& registry) {
    registry.add("conv2d", [](LayerArgs& args) -> std::unique_ptr<Layer> {
        Conv2dSettings s;
        s.filters = args.positive_int("filters");
        s.kernel = args.int_pair("kernel_size", std::nullopt);
        s.strides = args.int_pair("strides", IntPair{1, 1});
        s.padding = read_padding(args);
        s.dilation = args.int_pair("dilation_rate", IntPair{1, 1});
        s.use_bias = args.flag("use_bias", true);
        s.activation = args.activation("activation", Activation::linear);
        args.finish({"filters", "kernel_size", "strides", "padding", "dilation_rate", "use_bias", "activation"});
        return std::make_unique<Conv2d>(s);
    });
    const std::pair<const char*, PoolMode> pools[] = {{"max_pool2d", PoolMode::max}, {"avg_pool2d", PoolMode::average}};
    for (const auto& [type, mode] : pools) {
        registry.add(type, [mode = mode](LayerArgs& args) -> std::unique_ptr<Layer> {
            const IntPair pool = args.int_pair("pool_size", IntPair{2, 2});
            const IntPair strides = args.int_pair("strides", pool);
            const Padding padding = read_padding(args);
            args.finish({"pool_size", "strides", "padding"});
            return std::make_unique<Pool2d>(mode, pool, strides, padding);
        });
    }
    registry.add("global_avg_pool2d", [](LayerArgs& args) -> std::unique_ptr<Layer> {
        args.finish({});
        return std::make_unique<GlobalAvgPool2d>();
    });
    registry.add("batch_norm", [](LayerArgs& args) -> std::unique_ptr<Layer> {
        BatchNormSettings s;
        s.momentum = args.number("momentum", s.momentum, 0.0, 1.0);
        if (static_cast<float>(s.momentum) >= 1.0f)  // the moving statistics are updated in fp32
            args.fail("momentum", "is 1 in float32, so the moving statistics would never change; give at most "
                                  "0.9999999");
        s.epsilon = args.number("epsilon", s.epsilon, 0.0, 1.0);
        if (s.epsilon <= 0.0) args.fail("epsilon", "must be positive (e.g. epsilon: 0.001)");
        if (static_cast<float>(s.epsilon) == 0.0f)  // computed in fp32
            args.fail("epsilon", "is 0 in float32 (below 1.4e-45); give at least 1e-38, e.g. epsilon: 0.001");
        s.center = args.flag("center", true);
        s.scale = args.flag("scale", true);
        s.sync = args.flag("sync", false);
        args.finish({"momentum", "epsilon", "center", "scale", "sync"});
        return std::make_unique<BatchNorm>(s);
    });
    registry.add("reshape", [](LayerArgs& args) -> std::unique_ptr<Layer> {
        const std::vector<int64_t> target = args.int_list("target_shape");
        int unknown = 0;
        for (int64_t d : target) {
            if (d == -1) ++unknown;
            else if (d <= 0)
                args.fail("target_shape", "sizes must be positive (one may be -1 to infer it), got " +
                                              std::to_string(d));
        }
        if (unknown > 1) args.fail("target_shape", "only one size may be -1");
        args.finish({"target_shape"});
        return std::make_unique<Reshape>(target);
    });
}

}  // namespace

void register_builtin_layers(LayerRegistry& registry) {
    registry.add("flatten", [](LayerArgs& args) -> std::unique_ptr<Layer> {
        args.finish({});
        return std::make_unique<Flatten>();
    });
    registry.add("dense", [](LayerArgs& args) -> std::unique_ptr<Layer> {
        const int64_t units = args.positive_int("units");
        const Activation act = args.activation("activation", Activation::linear);
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
        if (static_cast<float>(rate) >= 1.0f)  // applied in fp32, where it would drop everything
            args.fail("rate", "is 1 in float32, which drops every input; give at most 0.9999999");
        args.finish({"rate"});
        return std::make_unique<Dropout>(static_cast<float>(rate));
    });
    const std::pair<const char*, MergeOp> merges[] = {
        {"add", MergeOp::add}, {"concatenate", MergeOp::concatenate}, {"multiply", MergeOp::multiply}};
    for (const auto& [type, op] : merges) {
        registry.add(type, [op = op](LayerArgs& args) -> std::unique_ptr<Layer> {
            if (op == MergeOp::concatenate && args.has("axis"))
                args.fail("axis", "concatenate always joins the last axis (channels for images, Keras' axis=-1); "
                                  "remove axis");
            args.finish({});
            return std::make_unique<Merge>(op);
        });
    }
    register_image_layers(registry);
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
