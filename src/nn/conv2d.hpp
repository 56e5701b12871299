// Conv2D over NHWC images: y = activation(conv(x, W) + b), W laid out
// [filters, kernel_h, kernel_w, in_channels] (cuDNN's NHWC filter order).
// Keras padding (same | valid), strides and dilation; kernel Glorot-uniform
// with Keras' fans (receptive field times channels), bias zeros.
#pragma once

#include "nn/layer.hpp"
#include "nn/layer_args.hpp"
#include "nn/spatial.hpp"

namespace gputrain::nn {

struct Conv2dSettings {
    int64_t filters = 1;
    IntPair kernel, strides, dilation;
    Padding padding = Padding::valid;
    bool use_bias = true;
    Activation activation = Activation::linear;
};

class Conv2d : public UnaryLayer {
public:
    explicit Conv2d(const Conv2dSettings& s) : s_(s) {}

    std::string type() const override { return "conv2d"; }
    std::string detail() const override;
    Shape build(const Shape& input_shape) override;
    std::vector<ParamSpec> param_specs() const override;
    void bind(const std::vector<float*>& params, const std::vector<float*>& grads) override;
    int64_t scratch_per_sample() const override;
    void set_scratch(float* scratch) override { pre_activation_ = scratch; }
    size_t workspace_bytes(Backend& backend, int64_t max_rows) override;
    void set_workspace(void* workspace, size_t bytes) override {
        workspace_ = workspace;
        workspace_bytes_ = bytes;
    }

    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    Conv2dGeometry geometry(int rows) const;
    int64_t out_pixels() const { return static_cast<int64_t>(g_.out_h) * g_.out_w; }

    Conv2dSettings s_;
    Conv2dGeometry g_;  // batch set per call
    float* kernel_ = nullptr;
    float* bias_ = nullptr;
    float* kernel_grad_ = nullptr;
    float* bias_grad_ = nullptr;
    float* pre_activation_ = nullptr;  // conv + bias before the activation, reused for dz
    void* workspace_ = nullptr;
    size_t workspace_bytes_ = 0;
};

}  // namespace gputrain::nn
