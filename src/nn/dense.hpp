// Dense: y = activation(x W + b) over the last axis (leading axes are rows).
// Kernel Glorot-uniform, bias zeros, as in Keras.
//
// `tie_weights: NAME` (nanoGPT's lm_head.weight = wte.weight): the kernel is
// the table E [units, in_features] of the embedding layer NAME, transposed,
// y = activation(x E^T + b). The layer has no kernel of its own (its
// param_specs are the bias alone); the model checks the tie and hands the
// table over (tie()). Backward writes E's gradient dz^T x over the table's
// gradient, to which the embedding's backward, run after it, adds its own.
#pragma once

#include <string>
#include <utility>

#include "nn/layer.hpp"

namespace gputrain::nn {

class Dense : public UnaryLayer {
public:
    Dense(int64_t units, Activation activation, bool use_bias, std::string tie_weights = "")
        : units_(units), activation_(activation), use_bias_(use_bias), tied_to_(std::move(tie_weights)) {}
    bool use_bias() const { return use_bias_; }

    int64_t units() const { return units_; }
    int64_t in_features() const { return in_features_; }
    // The embedding layer whose table is the kernel ("" = a kernel of its own).
    const std::string& tied_to() const { return tied_to_; }
    // The tied table [units, in_features] and its gradient (null: none).
    void tie(const float* table, float* table_grad) {
        kernel_ = table;
        kernel_grad_ = table_grad;
    }

    std::string type() const override { return "dense"; }
    std::string detail() const override;
    Shape build(const Shape& input_shape) override;
    std::vector<ParamSpec> param_specs() const override;
    void bind(const std::vector<float*>& params, const std::vector<float*>& grads) override;
    int64_t scratch_per_sample() const override;
    void set_scratch(float* scratch) override { pre_activation_ = scratch; }
    bool strip_final_softmax() override;
    bool ends_in_softmax() const override { return activation_ == Activation::softmax; }
    size_t gemm_scratch_bytes(const Backend& backend, int64_t max_rows) const override;
    // Under the backend's 16-bit GEMM copies: x's and the kernel's copies,
    // made in forward and read again by backward's two GEMMs (so each is
    // rounded once a step, not twice), and dz's copy in the workspace, made
    // once for both backward GEMMs. A relu layer's fp32 dz is in the
    // workspace too (it keeps no z between the passes).
    size_t gemm_copy_bytes(const Backend& backend, int64_t max_rows) const override;
    void set_gemm_copies(void* copies, size_t element_bytes) override;
    // A dense layer writes the next layer's input copy in its bias +
    // activation pass (Backend::bias_activation_forward_copy), or right after it.
    void* gemm_input_copy() const override { return x_copy_; }
    void set_gemm_input_copy_made(bool made) override { input_copy_made_ = made; }
    bool set_gemm_output_copy(void* copy) override {
        output_copy_ = copy;
        return true;
    }
    size_t workspace_bytes(Backend& backend, int64_t max_rows) override;
    void set_workspace(void* workspace, size_t bytes) override {
        (void)bytes;
        workspace_ = static_cast<char*>(workspace);
    }

    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    int64_t units_;
    Activation activation_;
    bool use_bias_;
    std::string tied_to_;
    bool tied() const { return !tied_to_.empty(); }
    int64_t in_features_ = 0;
    int64_t rows_per_sample_ = 1;  // product of the leading axes
    const float* kernel_ = nullptr;  // [in, units], or the tied table [units, in]
    float* bias_ = nullptr;
    float* kernel_grad_ = nullptr;
    float* bias_grad_ = nullptr;
    // z = x W + b, kept for the backward pass where the activation's
    // derivative needs it (not linear, not relu: their forward works in y,
    // and relu's derivative reads y), and reused for dz
    float* pre_activation_ = nullptr;
    bool keeps_z() const { return activation_ != Activation::linear && activation_ != Activation::relu; }
    // The workspace, within one backward call: relu's fp32 dz (256-byte
    // rounded), then dz's 16-bit copy.
    char* workspace_ = nullptr;
    size_t dz_workspace_bytes(size_t dz_elements) const;
    // The 16-bit copies (null without them); the layout of x and W.
    void* x_copy_ = nullptr;
    void* kernel_copy_ = nullptr;
    bool input_copy_made_ = false;   // by the layer before, in its forward
    void* output_copy_ = nullptr;    // the next layer's input copy, written here
    size_t kernel_copy_bytes(size_t element_bytes) const;
    bool uses_copies(const Backend& backend) const { return x_copy_ && backend.gemm_copy_bytes() > 0; }
};

}  // namespace gputrain::nn
