#include "nn/flatten.hpp"

#include "nn/registry.hpp"

namespace gputrain::nn {

Shape Flatten::build(const Shape& input_shape) {
    elements_ = shape_elements(input_shape);
    return {elements_};
}

void Flatten::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    ctx.backend.copy(y, x, static_cast<size_t>(rows) * elements_ * sizeof(float));
}

void Flatten::backward(const RunContext& ctx, const float*, const float*, const float* dy, float* dx, int rows) {
    if (dx) ctx.backend.copy(dx, dy, static_cast<size_t>(rows) * elements_ * sizeof(float));
}

// flatten: no keys.
void add_flatten_layer(LayerRegistry& registry) {
    registry.add("flatten", {}, [](LayerArgs& args) -> std::unique_ptr<Layer> {
        args.finish();
        return std::make_unique<Flatten>();
    });
}

}  // namespace gputrain::nn
