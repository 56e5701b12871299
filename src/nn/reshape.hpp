// Reshape: views each sample as `target_shape` (one axis may be -1: inferred
// from the element count). Row-major data keeps its order, so it is a copy.
#pragma once

#include "nn/layer.hpp"

namespace gputrain::nn {

class Reshape : public UnaryLayer {
public:
    // `target` is checked by the registry: positive sizes and at most one -1.
    explicit Reshape(Shape target) : target_(std::move(target)) {}

    std::string type() const override { return "reshape"; }
    Shape build(const Shape& input_shape) override;
    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    Shape target_;
    int64_t elements_ = 0;
};

}  // namespace gputrain::nn
