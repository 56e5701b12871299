// BatchNormalization over the last axis (the channels of an NHWC image, the
// units of a dense output). Training normalizes with the batch's mean and
// biased variance and moves the moving statistics (Keras' momentum/epsilon);
// evaluation uses the moving statistics.
//
// Across replicas: `sync: false` (Keras under MirroredStrategy) uses each
// replica's own batch statistics; the trainer averages the moving statistics
// after each step so every replica holds the same state. `sync: true`
// all-reduces [sum x, sum x^2, count] in forward and [sum dy, sum dy*xhat] in
// backward, so N replicas compute exactly what one computes on the global
// batch. gamma/beta gradients stay this replica's sums (the trainer's gradient
// all-reduce adds them up like every other parameter gradient).
#pragma once

#include "nn/layer.hpp"

namespace gputrain::nn {

struct BatchNormSettings {
    double momentum = 0.99;
    double epsilon = 0.001;
    bool center = true;  // learn beta
    bool scale = true;   // learn gamma
    bool sync = false;
};

class BatchNorm : public UnaryLayer {
public:
    explicit BatchNorm(const BatchNormSettings& s) : s_(s) {}

    std::string type() const override { return "batch_norm"; }
    std::string detail() const override { return s_.sync ? "sync" : ""; }
    bool frozen_runs_inference() const override { return true; }
    double momentum() const { return s_.momentum; }
    Shape build(const Shape& input_shape) override;
    std::vector<ParamSpec> param_specs() const override;
    void bind(const std::vector<float*>& params, const std::vector<float*>& grads) override;
    int64_t scratch_fixed() const override { return 8 * int64_t{channels_} + 1; }
    void set_scratch(float* scratch) override;

    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;
    void forward_without_rows(const RunContext& ctx) override;
    void backward_without_rows(const RunContext& ctx) override;

private:
    bool syncing(const RunContext& ctx) const { return s_.sync && ctx.cross_replica != nullptr; }
    // Batch statistics from stats_ (this replica's sums, or the group's when syncing).
    void finalize(const RunContext& ctx, int rows_here);
    void fill_constants(Backend& backend);

    BatchNormSettings s_;
    int channels_ = 0;
    int64_t rows_per_sample_ = 1;  // pixels per sample for an image
    float* gamma_ = nullptr;       // the learned scale, or ones_ without `scale`
    float* beta_ = nullptr;        // the learned offset, or zeros_ without `center`
    float* gamma_grad_ = nullptr;
    float* beta_grad_ = nullptr;
    float* moving_mean_ = nullptr;
    float* moving_var_ = nullptr;
    // Fixed scratch: stats_ [2C + 1] (sum x, sum x^2, count), mean_invstd_ [2C]
    // kept from forward to backward, grad_sums_ [2C], ones_ [C], zeros_ [C].
    float* stats_ = nullptr;
    float* mean_invstd_ = nullptr;
    float* grad_sums_ = nullptr;
    float* ones_ = nullptr;
    float* zeros_ = nullptr;
    float count_ = 0;  // rows behind the latest batch statistics (the group's when syncing)
};

}  // namespace gputrain::nn
