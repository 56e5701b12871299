// Flatten: (d1, d2, ...) -> (d1 * d2 * ...). Data is already contiguous, so it is a copy.
#pragma once

#include "nn/layer.hpp"

namespace gputrain::nn {

class Flatten : public UnaryLayer {
public:
    std::string type() const override { return "flatten"; }
    Shape build(const Shape& input_shape) override;
    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    int64_t elements_ = 0;
};

}  // namespace gputrain::nn
