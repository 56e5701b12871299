#include "nn/global_avg_pool2d.hpp"

#include "nn/registry.hpp"
#include "nn/spatial.hpp"

namespace gputrain::nn {

Shape GlobalAvgPool2d::build(const Shape& input_shape) {
    require_image_input(name_, type(), input_shape);
    g_.mode = PoolMode::average;
    g_.in_h = g_.pool_h = g_.stride_h = static_cast<int>(input_shape[0]);
    g_.in_w = g_.pool_w = g_.stride_w = static_cast<int>(input_shape[1]);
    g_.channels = static_cast<int>(input_shape[2]);
    g_.out_h = g_.out_w = 1;
    return {input_shape[2]};  // the same bytes as (1, 1, channels)
}

void GlobalAvgPool2d::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    Pool2dGeometry g = g_;
    g.batch = rows;
    ctx.backend.pool2d_forward(g, x, y);
}

void GlobalAvgPool2d::backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                               int rows) {
    if (!dx) return;
    Pool2dGeometry g = g_;
    g.batch = rows;
    ctx.backend.pool2d_backward(g, x, y, dy, dx);
}

// global_avg_pool2d: no keys.
void add_global_avg_pool2d_layer(LayerRegistry& registry) {
    registry.add("global_avg_pool2d", {}, [](LayerArgs& args) -> std::unique_ptr<Layer> {
        args.finish();
        return std::make_unique<GlobalAvgPool2d>();
    });
}

}  // namespace gputrain::nn
