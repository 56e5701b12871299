#include "nn/dense.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "nn/activation_step.hpp"

namespace gputrain::nn {

std::string Dense::detail() const { return activation_ == Activation::linear ? "" : activation_name(activation_); }

Shape Dense::build(const Shape& input_shape) {
    if (input_shape.empty())
        throw ConfigError("layer '" + name_ + "' (dense): input has no axes; give model.input_shape");
    in_features_ = input_shape.back();
    rows_per_sample_ = shape_elements(input_shape) / in_features_;
    Shape out = input_shape;
    out.back() = units_;
    return out;
}

std::vector<ParamSpec> Dense::param_specs() const {
    std::vector<ParamSpec> specs{{"kernel", {in_features_, units_}, Init::glorot_uniform}};
    if (use_bias_) specs.push_back({"bias", {units_}, Init::zeros});
    return specs;
}

void Dense::bind(const std::vector<float*>& params, const std::vector<float*>& grads) {
    kernel_ = params[0];
    kernel_grad_ = grads[0];
    if (use_bias_) {
        bias_ = params[1];
        bias_grad_ = grads[1];
    }
}

int64_t Dense::scratch_per_sample() const {
    // Linear layers need no copy of z: y is z.
    return activation_ == Activation::linear ? 0 : rows_per_sample_ * units_;
}

bool Dense::strip_final_softmax() {
    if (activation_ != Activation::softmax) return false;
    activation_ = Activation::linear;
    return true;
}

size_t Dense::gemm_scratch_bytes(const Backend& backend, int64_t max_rows) const {
    // The three GEMMs of forward and backward below, with their leading dimensions.
    const int m = static_cast<int>(max_rows * rows_per_sample_), n = static_cast<int>(units_),
              k = static_cast<int>(in_features_);
    return std::max({backend.gemm_scratch_bytes(false, false, m, n, k, k, n),
                     backend.gemm_scratch_bytes(true, false, k, n, m, k, n),
                     backend.gemm_scratch_bytes(false, true, m, k, n, n, n)});
}

void Dense::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    Backend& be = ctx.backend;
    const int m = static_cast<int>(rows * rows_per_sample_), n = static_cast<int>(units_),
              k = static_cast<int>(in_features_);
    const float* bias = use_bias_ ? bias_ : nullptr;
    // One kernel where the backend has it (training.gemm_epilogues); it writes y alone.
    if (be.gemm_bias_activation(activation_, m, n, k, x, kernel_, bias, y)) return;
    float* z = activation_ == Activation::linear ? y : pre_activation_;
    be.gemm(false, false, m, n, k, 1.0f, x, k, kernel_, n, 0.0f, z, n);
    bias_activation_step_forward(be, activation_, z, bias, y, m, n, ctx.fused);
}

void Dense::backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx, int rows) {
    Backend& be = ctx.backend;
    const int m = static_cast<int>(rows * rows_per_sample_), n = static_cast<int>(units_),
              k = static_cast<int>(in_features_);
    const float* dz = dy;
    if (activation_ != Activation::linear || !use_bias_ ||
        !be.gemm_weight_bias_grad(m, n, k, x, dy, kernel_grad_, bias_grad_)) {
        // relu's derivative is the same read from y as from z (y > 0 exactly
        // where z > 0), and a forward GEMM epilogue leaves z unwritten.
        const float* z = activation_ == Activation::relu ? y : pre_activation_;
        // dz overwrites z: z is not needed once its derivative is taken.
        dz = activation_bias_step_backward(be, activation_, z, y, dy, pre_activation_,
                                           use_bias_ ? bias_grad_ : nullptr, m, n, ctx.fused);
        be.gemm(true, false, k, n, m, 1.0f, x, k, dz, n, 0.0f, kernel_grad_, n);
    }
    if (dx) be.gemm(false, true, m, k, n, 1.0f, dz, n, kernel_, n, 0.0f, dx, k);
}

}  // namespace gputrain::nn
