// GlobalAveragePooling2D: (height, width, channels) -> (channels), the mean of
// each channel over the image. An average pool whose window is the whole image.
#pragma once

#include "nn/layer.hpp"

namespace gputrain::nn {

class GlobalAvgPool2d : public UnaryLayer {
public:
    std::string type() const override { return "global_avg_pool2d"; }
    Shape build(const Shape& input_shape) override;
    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    Pool2dGeometry g_;  // batch set per call
};

}  // namespace gputrain::nn
