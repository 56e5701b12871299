#include "nn/dense.hpp"

#include <algorithm>

#include "backend/gemm_input_cast.hpp"
#include "core/error.hpp"
#include "nn/activation_step.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

std::string Dense::detail() const {
    std::string out = activation_ == Activation::linear ? "" : activation_name(activation_);
    if (tied()) out += (out.empty() ? "" : ", ") + std::string("tied to ") + tied_to_;
    return out;
}

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
    // A tied kernel is the embedding's tensor: the model holds it once, there.
    std::vector<ParamSpec> specs;
    if (!tied()) specs.push_back({"kernel", {in_features_, units_}, Init::glorot_uniform});
    if (use_bias_) specs.push_back({"bias", {units_}, Init::zeros});
    return specs;
}

void Dense::bind(const std::vector<float*>& params, const std::vector<float*>& grads) {
    size_t i = 0;
    if (!tied()) {
        kernel_ = params[i];
        kernel_grad_ = grads[i];
        ++i;
    }
    if (use_bias_) {
        bias_ = params[i];
        bias_grad_ = grads[i];
    }
}

int64_t Dense::scratch_per_sample() const { return keeps_z() ? rows_per_sample_ * units_ : 0; }

bool Dense::strip_final_softmax() {
    if (activation_ != Activation::softmax) return false;
    activation_ = Activation::linear;
    return true;
}

size_t Dense::gemm_scratch_bytes(const Backend& backend, int64_t max_rows) const {
    // With copies of its own the layer never has gemm() make them.
    if (backend.gemm_copy_bytes() > 0) return 0;
    // The three GEMMs of forward and backward below, with their leading dimensions.
    const int m = static_cast<int>(max_rows * rows_per_sample_), n = static_cast<int>(units_),
              k = static_cast<int>(in_features_);
    if (tied())
        return std::max({backend.gemm_scratch_bytes(false, true, m, n, k, k, k),
                         backend.gemm_scratch_bytes(true, false, n, k, m, n, k),
                         backend.gemm_scratch_bytes(false, false, m, k, n, n, k)});
    return std::max({backend.gemm_scratch_bytes(false, false, m, n, k, k, n),
                     backend.gemm_scratch_bytes(true, false, k, n, m, k, n),
                     backend.gemm_scratch_bytes(false, true, m, k, n, n, n)});
}

size_t Dense::kernel_copy_bytes(size_t element_bytes) const {
    return round_up_cast_copy(static_cast<size_t>(in_features_ * units_) * element_bytes);
}

size_t Dense::gemm_copy_bytes(const Backend& backend, int64_t max_rows) const {
    const size_t e = backend.gemm_copy_bytes();
    if (e == 0) return 0;
    return kernel_copy_bytes(e) + round_up_cast_copy(static_cast<size_t>(max_rows * rows_per_sample_ * in_features_) * e);
}

void Dense::set_gemm_copies(void* copies, size_t element_bytes) {
    // The kernel's copy first, x's after it (gemm_copy_bytes' sizes).
    kernel_copy_ = copies;
    x_copy_ = copies ? static_cast<char*>(copies) + kernel_copy_bytes(element_bytes) : nullptr;
}

size_t Dense::dz_workspace_bytes(size_t dz_elements) const {
    return activation_ == Activation::relu ? round_up_cast_copy(dz_elements * sizeof(float)) : 0;
}

size_t Dense::workspace_bytes(Backend& backend, int64_t max_rows) {
    const size_t dz_elements = static_cast<size_t>(max_rows * rows_per_sample_ * units_);
    return dz_workspace_bytes(dz_elements) + dz_elements * backend.gemm_copy_bytes();  // relu's dz, dz's copy
}

void Dense::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    Backend& be = ctx.backend;
    const int m = static_cast<int>(rows * rows_per_sample_), n = static_cast<int>(units_),
              k = static_cast<int>(in_features_);
    const size_t out_elements = static_cast<size_t>(m) * static_cast<size_t>(n);
    const bool copies = uses_copies(be);
    const float* bias = use_bias_ ? bias_ : nullptr;
    // One kernel where the backend has it (training.gemm_epilogues; on fp32
    // operands, so not with copies, and on a kernel [k, n], so not tied); it writes y alone.
    if (!copies && !tied() && be.gemm_bias_activation(activation_, m, n, k, x, kernel_, bias, y)) return;
    // W [k, n] (leading dimension n), or the tied table E [n, k] read transposed.
    const int ldw = tied() ? k : n;
    // z is kept for the backward pass, except where y is all it needs:
    // linear (y is z) and relu (its derivative reads y), which work in place.
    float* z = keeps_z() ? pre_activation_ : y;
    if (copies) {
        // x's copy may have been written by the layer before, with x.
        if (!input_copy_made_) be.gemm_copy(x, x_copy_, static_cast<size_t>(m) * static_cast<size_t>(k));
        be.gemm_copy(kernel_, kernel_copy_, static_cast<size_t>(k) * static_cast<size_t>(n));
        be.gemm_copied(false, tied(), m, n, k, 1.0f, x_copy_, k, kernel_copy_, ldw, 0.0f, z, n);
    } else {
        be.gemm(false, tied(), m, n, k, 1.0f, x, k, kernel_, ldw, 0.0f, z, n);
    }
    if (copies && output_copy_ && ctx.fused && is_elementwise(activation_)) {
        be.bias_activation_forward_copy(activation_, z, bias, y, output_copy_, m, n);
        return;
    }
    bias_activation_step_forward(be, activation_, z, bias, y, m, n, ctx.fused);
    if (copies && output_copy_) be.gemm_copy(y, output_copy_, out_elements);
}

void Dense::backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx, int rows) {
    Backend& be = ctx.backend;
    const int m = static_cast<int>(rows * rows_per_sample_), n = static_cast<int>(units_),
              k = static_cast<int>(in_features_);
    const float* dz = dy;
    const bool copies = uses_copies(be);
    const size_t dz_elements = static_cast<size_t>(m) * static_cast<size_t>(n);
    // dz: relu's in the workspace, the others' over z; its copy after relu's dz.
    float* dz_out = activation_ == Activation::relu ? reinterpret_cast<float*>(workspace_) : pre_activation_;
    void* dz_copy = workspace_ + dz_workspace_bytes(dz_elements);
    // The epilogues multiply fp32 operands: not with copies (a GPU offers none
    // then); and write dW [k, n]: not for a tied table's dE [n, k].
    if (copies || tied() || activation_ != Activation::linear || !use_bias_ ||
        !be.gemm_weight_bias_grad(m, n, k, x, dy, kernel_grad_, bias_grad_)) {
        // relu's derivative is the same read from y as from z (y > 0 exactly
        // where z > 0), and a forward GEMM epilogue leaves z unwritten;
        // linear's derivative reads neither.
        const float* z = keeps_z() ? pre_activation_ : y;
        float* db = use_bias_ ? bias_grad_ : nullptr;
        if (copies && ctx.fused && is_elementwise(activation_)) {
            // dz's copy straight from the gradient pass; fp32 dz is not needed.
            be.activation_bias_backward_copy(activation_, z, y, dy, dz_out, dz_copy, db, m, n);
        } else {
            // dz may overwrite z: z is not needed once its derivative is taken.
            dz = activation_bias_step_backward(be, activation_, z, y, dy, dz_out, db, m, n, ctx.fused);
            if (copies) be.gemm_copy(dz, dz_copy, dz_elements);
        }
        if (tied()) {
            // dE [n, k] = dz^T x, over the table's gradient: the embedding's
            // backward (later in this pass) adds the lookup's to it.
            if (copies)
                be.gemm_copied(true, false, n, k, m, 1.0f, dz_copy, n, x_copy_, k, 0.0f, kernel_grad_, k);
            else if (kernel_grad_)
                be.gemm(true, false, n, k, m, 1.0f, dz, n, x, k, 0.0f, kernel_grad_, k);
        } else if (copies) {
            // x's copy is forward's: x has not changed since (the model keeps it for this pass).
            be.gemm_copied(true, false, k, n, m, 1.0f, x_copy_, k, dz_copy, n, 0.0f, kernel_grad_, n);
        } else {
            be.gemm(true, false, k, n, m, 1.0f, x, k, dz, n, 0.0f, kernel_grad_, n);
        }
    }
    if (!dx) return;
    // dx = dz W^T, or dz E for the tied table.
    const int ldw = tied() ? k : n;
    if (copies)  // dz's copy from above, the kernel's from forward (the optimizer runs after backward)
        be.gemm_copied(false, !tied(), m, k, n, 1.0f, dz_copy, n, kernel_copy_, ldw, 0.0f, dx, k);
    else
        be.gemm(false, !tied(), m, k, n, 1.0f, dz, n, kernel_, ldw, 0.0f, dx, k);
}

// dense: units, activation, use_bias, tie_weights (an embedding layer's
// name; read only when given, so an untied layer's resolved config is as it was).
void add_dense_layer(LayerRegistry& registry) {
    registry.add("dense", {"units", "activation", "use_bias", "tie_weights", "trainable", "lr_multiplier"},
                 [](LayerArgs& args) -> std::unique_ptr<Layer> {
        const int64_t units = args.positive_int("units");
        const Activation act = args.activation("activation", Activation::linear);
        const bool use_bias = args.flag("use_bias", true);
        const std::string tie = args.has("tie_weights") ? args.word("tie_weights", "") : "";
        if (args.has("tie_weights") && tie.empty())
            args.fail("tie_weights", "is empty; name the embedding layer whose table is this layer's kernel, "
                                     "e.g. tie_weights: embedding");
        args.finish();
        return std::make_unique<Dense>(units, act, use_bias, tie);
    });
}

}  // namespace gputrain::nn
