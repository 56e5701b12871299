// MaxPooling2D / AveragePooling2D over NHWC images, per channel. Keras
// padding (same | valid); strides default to the pool size. Average pooling
// with padding same divides by the input pixels in the window only (Keras).
#pragma once

#include "nn/layer.hpp"
#include "nn/layer_args.hpp"
#include "nn/spatial.hpp"

namespace gputrain::nn {

class Pool2d : public UnaryLayer {
public:
    Pool2d(PoolMode mode, IntPair pool, IntPair strides, Padding padding)
        : mode_(mode), pool_(pool), strides_(strides), padding_(padding) {}

    std::string type() const override { return mode_ == PoolMode::max ? "max_pool2d" : "avg_pool2d"; }
    std::string detail() const override;
    Shape build(const Shape& input_shape) override;
    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    PoolMode mode_;
    IntPair pool_, strides_;
    Padding padding_;
    Pool2dGeometry g_;  // batch set per call
};

}  // namespace gputrain::nn
