// Layer normalization and RMS normalization over the last axis (Keras'
// LayerNormalization / RMSNormalization, PyTorch's nn.LayerNorm / nn.RMSNorm
// with normalized_shape = the last axis). Each vector along the last axis C
// is normalized on its own, with its own statistics, in training and in
// evaluation alike (no moving statistics, nothing shared between samples or
// replicas):
//   layer_norm: y = (x - mean) / sqrt(var + epsilon) * gamma + beta, var biased
//   rms_norm:   y = x / sqrt(mean(x^2) + epsilon) * gamma
// Any input with at least one axis; every other axis counts as rows
// (rows_per_sample = elements / C). Kernels: backend/ops/normalization.hpp.
#pragma once

#include "nn/layer.hpp"

namespace gputrain::nn {

struct LayerNormSettings {
    // PyTorch's and GPT's default for layer_norm (Keras' is 1e-3); rms_norm's
    // factory gives 1e-6 (Keras' RMSNormalization).
    double epsilon = 1e-5;
    bool center = true;  // learn beta (always false with rms)
    bool scale = true;   // learn gamma
    bool rms = false;    // rms_norm: no mean subtracted, no beta
};

class LayerNorm : public UnaryLayer {
public:
    explicit LayerNorm(const LayerNormSettings& s);

    std::string type() const override { return s_.rms ? "rms_norm" : "layer_norm"; }
    const LayerNormSettings& settings() const { return s_; }
    Shape build(const Shape& input_shape) override;
    // gamma [C] (ones) if scale, then beta [C] (zeros) if center.
    std::vector<ParamSpec> param_specs() const override;
    void bind(const std::vector<float*>& params, const std::vector<float*>& grads) override;
    // Per row, kept from forward to backward: mean (layer_norm only), rstd.
    int64_t scratch_per_sample() const override { return (s_.rms ? 1 : 2) * rows_per_sample_; }
    void set_scratch(float* scratch) override { scratch_ = scratch; }
    // Room for the GPU to split the gamma/beta column sums into chunks of rows.
    size_t workspace_bytes(Backend& backend, int64_t max_rows) override;
    void set_workspace(void* workspace, size_t bytes) override;

    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    LayerNormSettings s_;
    int channels_ = 0;
    int64_t rows_per_sample_ = 1;
    float* gamma_ = nullptr;  // null without `scale` (the kernels take 1)
    float* beta_ = nullptr;   // null without `center` (the kernels take 0)
    float* gamma_grad_ = nullptr;
    float* beta_grad_ = nullptr;
    float* scratch_ = nullptr;  // mean [m] then rstd [m] for m rows of C (rms: rstd alone)
    float* workspace_ = nullptr;
    size_t workspace_floats_ = 0;
};

}  // namespace gputrain::nn
