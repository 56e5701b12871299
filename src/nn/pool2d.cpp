#include "nn/pool2d.hpp"

#include "core/error.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

std::string Pool2d::detail() const {
    std::string d = std::to_string(pool_.h) + "x" + std::to_string(pool_.w);
    if (strides_.h != pool_.h || strides_.w != pool_.w)
        d += " stride " + std::to_string(strides_.h) + "x" + std::to_string(strides_.w);
    if (padding_ == Padding::same) d += " same";
    return d;
}

Shape Pool2d::build(const Shape& input_shape) {
    require_image_input(name_, type(), input_shape);
    WindowAxis h, w;
    if (!window_axis(input_shape[0], pool_.h, strides_.h, 1, padding_, h) ||
        !window_axis(input_shape[1], pool_.w, strides_.w, 1, padding_, w))
        throw ConfigError("layer '" + name_ + "' (" + type() + "): pool_size " + std::to_string(pool_.h) + "x" +
                          std::to_string(pool_.w) + " is larger than its input " + shape_to_string(input_shape, false) +
                          " with padding valid; use a smaller pool_size or padding: same");
    require_int_extent(name_, type(),
                       "pool_size " + std::to_string(pool_.h) + "x" + std::to_string(pool_.w) + " strides " +
                           std::to_string(strides_.h) + "x" + std::to_string(strides_.w) + " padding " +
                           padding_name(padding_),
                       h, w);
    g_.mode = mode_;
    g_.in_h = static_cast<int>(input_shape[0]);
    g_.in_w = static_cast<int>(input_shape[1]);
    g_.channels = static_cast<int>(input_shape[2]);
    g_.out_h = static_cast<int>(h.out);
    g_.out_w = static_cast<int>(w.out);
    g_.pool_h = static_cast<int>(pool_.h);
    g_.pool_w = static_cast<int>(pool_.w);
    g_.stride_h = static_cast<int>(strides_.h);
    g_.stride_w = static_cast<int>(strides_.w);
    g_.pad_top = static_cast<int>(h.pad_before);
    g_.pad_left = static_cast<int>(w.pad_before);
    return {h.out, w.out, input_shape[2]};
}

void Pool2d::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    Pool2dGeometry g = g_;
    g.batch = rows;
    ctx.backend.pool2d_forward(g, x, y);
}

void Pool2d::backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx, int rows) {
    if (!dx) return;
    Pool2dGeometry g = g_;
    g.batch = rows;
    ctx.backend.pool2d_backward(g, x, y, dy, dx);
}

// max_pool2d and avg_pool2d: pool_size, strides (default: pool_size), padding.
void add_pool2d_layers(LayerRegistry& registry) {
    const std::pair<const char*, PoolMode> pools[] = {{"max_pool2d", PoolMode::max}, {"avg_pool2d", PoolMode::average}};
    for (const auto& [type, mode] : pools) {
        registry.add(type, {"pool_size", "strides", "padding"}, [mode = mode](LayerArgs& args) -> std::unique_ptr<Layer> {
            const IntPair pool = args.int_pair("pool_size", IntPair{2, 2});
            const IntPair strides = args.int_pair("strides", pool);
            const Padding padding = read_padding(args);
            args.finish();
            return std::make_unique<Pool2d>(mode, pool, strides, padding);
        });
    }
}

}  // namespace gputrain::nn
