#include "nn/activation_layer.hpp"

#include "nn/registry.hpp"

namespace gputrain::nn {

Shape ActivationLayer::build(const Shape& input_shape) {
    elements_ = shape_elements(input_shape);
    last_axis_ = input_shape.empty() ? 1 : input_shape.back();
    return input_shape;
}

bool ActivationLayer::strip_final_softmax() {
    if (activation_ != Activation::softmax) return false;
    activation_ = Activation::linear;
    return true;
}

void ActivationLayer::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    const size_t n = static_cast<size_t>(rows) * elements_;
    if (activation_ == Activation::softmax)
        ctx.backend.softmax_forward(x, y, static_cast<int>(n / last_axis_), static_cast<int>(last_axis_));
    else
        ctx.backend.activation_forward(activation_, x, y, n);
}

void ActivationLayer::backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                               int rows) {
    if (!dx) return;
    const size_t n = static_cast<size_t>(rows) * elements_;
    if (activation_ == Activation::softmax)
        ctx.backend.softmax_backward(y, dy, dx, static_cast<int>(n / last_axis_), static_cast<int>(last_axis_));
    else
        ctx.backend.activation_backward(activation_, x, y, dy, dx, n);
}

// One layer type per element-wise activation (relu, tanh, ...; softmax too): no keys.
void add_activation_layers(LayerRegistry& registry) {
    for (const auto& act_name : activation_names()) {
        Activation act;
        parse_activation(act_name, act);
        if (act == Activation::linear) continue;
        registry.add(act_name, {}, [act](LayerArgs& args) -> std::unique_ptr<Layer> {
            args.finish();
            return std::make_unique<ActivationLayer>(act);
        });
    }
}

}  // namespace gputrain::nn
