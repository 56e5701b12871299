// Activation layers: relu, sigmoid, tanh, gelu, softmax (over the last axis).
#pragma once

#include "nn/layer.hpp"

namespace gputrain::nn {

class ActivationLayer : public UnaryLayer {
public:
    explicit ActivationLayer(Activation activation) : configured_(activation), activation_(activation) {}

    // As configured: a softmax fused into the loss still shows as one.
    std::string type() const override { return activation_name(configured_); }
    Shape build(const Shape& input_shape) override;
    bool strip_final_softmax() override;
    bool ends_in_softmax() const override { return activation_ == Activation::softmax; }
    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    Activation configured_;
    Activation activation_;  // linear once its softmax moved into the loss
    int64_t elements_ = 0;  // per sample
    int64_t last_axis_ = 0;
};

}  // namespace gputrain::nn
