// The element-wise formulas shared by every backend: activations and their
// derivatives, the optimizer updates. Compiled as host code here and as
// __host__ __device__ code under nvcc, so the CPU tests check the same formula
// the GPU kernels run.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/activation.hpp"

#if defined(__CUDACC__)
#define GPUTRAIN_HD __host__ __device__ __forceinline__
#else
#define GPUTRAIN_HD inline
#endif

namespace gputrain::math {

GPUTRAIN_HD float relu(float x) { return x > 0.0f ? x : 0.0f; }
GPUTRAIN_HD float relu_grad(float x) { return x > 0.0f ? 1.0f : 0.0f; }

GPUTRAIN_HD float sigmoid(float x) {
    // Split by sign so exp never overflows.
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    const float e = expf(x);
    return e / (1.0f + e);
}
// In terms of the output y = sigmoid(x).
GPUTRAIN_HD float sigmoid_grad_from_output(float y) { return y * (1.0f - y); }

GPUTRAIN_HD float tanh_act(float x) { return tanhf(x); }
GPUTRAIN_HD float tanh_grad_from_output(float y) { return 1.0f - y * y; }

// exp(x) in plain float arithmetic (Cephes' expf: x = n ln2 + r, |r| <= ln2/2,
// a degree-5 polynomial for e^r, 2^n put into the exponent bits), so that
// loops calling it vectorize; within 2 ulp of expf. Inputs below -87 give
// about 1e-38 (not 0), above 88 about 1.7e38.
GPUTRAIN_HD float exp_poly(float x) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    // n = round(x / ln2) by the 1.5 * 2^23 trick (no floorf: SSE2 has none).
    const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
#if defined(__CUDA_ARCH__)
    return p * __int_as_float(bits);
#else
    float scale;
    __builtin_memcpy(&scale, &bits, sizeof scale);
    return p * scale;
#endif
}

// The normal distribution's CDF Phi(x) = erfc(-x / sqrt 2) / 2, with erfc
// from Numerical Recipes' Chebyshev fit (fractional error below 1.2e-7 on
// both tails), in the arithmetic of exp_poly.
GPUTRAIN_HD float normal_cdf(float x) {
    const float z = fabsf(x) * 0.70710678118654752f;
    const float t = 1.0f / (1.0f + 0.5f * z);
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    const float tail = 0.5f * t * exp_poly(p - z * z);  // Phi(-|x|)
    return x >= 0.0f ? 1.0f - tail : tail;
}

// Exact GELU (Keras approximate=False, PyTorch default): x * Phi(x), with
// Phi from normal_cdf (within 1.2e-7 of the erf form, relative) so that the
// CPU's loops vectorize; the GPU computes the same formula.
GPUTRAIN_HD float gelu(float x) { return x * normal_cdf(x); }
// Its gradient Phi(x) + x phi(x) from x and y = gelu(x): Phi(x) = y / x
// (within a rounding of normal_cdf's), which saves the second polynomial,
// division and exponential of normal_cdf. Near 0 (|x| <= 1e-20, where Phi
// rounds to 0.5 in float and y / x would divide subnormals) it is 0.5; where
// y has underflowed (x below -13) Phi is under 1e-38 and phi's term is all.
GPUTRAIN_HD float gelu_grad(float x, float y) {
    const float pdf = 0.39894228040143268f * exp_poly(-0.5f * x * x);
    const float cdf = fabsf(x) > 1e-20f ? y / x : 0.5f;
    return cdf + x * pdf;
}

// The element-wise activations by kind, for kernels specialised per kind at
// compile time (the fused bias + activation passes). The gradient formula
// takes the input z (relu), the output y (sigmoid, tanh) or both (gelu), as
// the plain passes do.
template <Activation A>
constexpr bool kElementwise =
    A == Activation::relu || A == Activation::sigmoid || A == Activation::tanh || A == Activation::gelu;

template <Activation A>
GPUTRAIN_HD float activate(float z) {
    static_assert(kElementwise<A>);
    if constexpr (A == Activation::relu) return relu(z);
    if constexpr (A == Activation::sigmoid) return sigmoid(z);
    if constexpr (A == Activation::tanh) return tanh_act(z);
    if constexpr (A == Activation::gelu) return gelu(z);
}
template <Activation A>
GPUTRAIN_HD float activation_grad(float z, float y) {
    static_assert(kElementwise<A>);
    if constexpr (A == Activation::relu) return relu_grad(z);
    if constexpr (A == Activation::sigmoid) return sigmoid_grad_from_output(y);
    if constexpr (A == Activation::tanh) return tanh_grad_from_output(y);
    if constexpr (A == Activation::gelu) return gelu_grad(z, y);
}

// Counter-based uniform in [0,1): the same (key, index) always gives the same
// value on every backend and replica (dropout masks independent of sharding).
GPUTRAIN_HD float hash_uniform(uint64_t key, uint64_t index) {
    uint64_t z = key ^ (index * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

// Keras Adam: m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2);
// p -= alpha * m / (sqrt(v) + eps), alpha = lr * sqrt(1 - b2^t) / (1 - b1^t).
// AdamW first decays: p -= lr * wd * p.
struct AdamParams {
    float alpha;          // bias-corrected step size
    float beta1, beta2, epsilon;
    float decay;          // lr * weight_decay (0 for Adam)
};
GPUTRAIN_HD void adam_update(float& p, float g, float& m, float& v, const AdamParams& a) {
    p -= a.decay * p;
    m += (g - m) * (1.0f - a.beta1);
    v += (g * g - v) * (1.0f - a.beta2);
    p -= a.alpha * m / (sqrtf(v) + a.epsilon);
}

// A 64-bit key kept in memory as two 32-bit words, low word first
// (Backend::dropout_forward_keyed).
GPUTRAIN_HD uint64_t join_key_words(const uint32_t* words) {
    return words[0] | static_cast<uint64_t>(words[1]) << 32;
}

// Backend::check_finite's tally of one verdict into the guard words
// ([0] this call, [1] calls that found NaN/Inf, [2] calls, [3] 1 + first such call).
GPUTRAIN_HD void tally_finite(int32_t* guard, bool finite) {
    guard[0] = finite ? 0 : 1;
    if (!finite) {
        guard[1] += 1;
        if (guard[3] == 0) guard[3] = guard[2] + 1;
    }
    guard[2] += 1;
}

// training.precision: fp16's dynamic loss scaling (train/loss_scaler.hpp),
// kept in backend memory and updated there after each step's finite check
// (Backend::loss_scale_update), so that the step loop never waits for it and
// a recorded graph carries it. As torch.cuda.amp.GradScaler: the loss
// gradient is multiplied by `scale` (a power of two) and the parameter
// gradients by `inverse`; a step whose gradients overflow is skipped and the
// scale halved, kLossScaleGrowthInterval good steps in a row double it. At
// kMinLossScale an overflow is divergence instead.
constexpr float kInitialLossScale = 65536.0f;  // 2^16, as PyTorch
constexpr float kMinLossScale = 1.0f;
constexpr float kMaxLossScale = 16777216.0f;  // 2^24: fp16 gradients overflow long before
constexpr int32_t kLossScaleGrowthInterval = 2000;
struct LossScaleState {
    float scale = kInitialLossScale;
    float inverse = 1.0f / kInitialLossScale;
    int32_t good_steps = 0;   // good steps in a row since the scale last changed
    int32_t skip = 0;         // what the optimizer reads: this step is not applied
    // Counts since the last reset (an epoch's start), read at progress reports:
    int32_t overflows = 0;    // steps skipped with the scale halved
    int32_t divergences = 0;  // non-finite steps at kMinLossScale
    int32_t first_divergence = 0;  // 1 + `steps` at the first divergence; 0 for none
    int32_t steps = 0;
};
// One step's update from its finite check's verdict (`bad`: NaN/Inf in the
// scaled gradients). `sticky`: training.on_nan stop, whose weights must stay
// as they were before the first divergence: every later step is skipped too.
GPUTRAIN_HD void loss_scale_update(LossScaleState& s, bool bad, bool sticky) {
    if (bad && s.scale > kMinLossScale) {
        s.scale = s.scale * 0.5f < kMinLossScale ? kMinLossScale : s.scale * 0.5f;
        s.good_steps = 0;
        s.overflows += 1;
    } else if (bad) {
        s.divergences += 1;
        if (s.first_divergence == 0) s.first_divergence = s.steps + 1;
    } else if (++s.good_steps >= kLossScaleGrowthInterval) {
        s.scale = s.scale * 2.0f > kMaxLossScale ? kMaxLossScale : s.scale * 2.0f;
        s.good_steps = 0;
    }
    s.inverse = 1.0f / s.scale;
    s.skip = bad || (sticky && s.divergences > 0) ? 1 : 0;
    s.steps += 1;
}

// Keras SGD: v = momentum * v - lr * g; p += v (Nesterov: p += momentum * v - lr * g).
struct SgdParams {
    float learning_rate, momentum;
    bool nesterov;
};
GPUTRAIN_HD void sgd_momentum_update(float& p, float g, float& v, const SgdParams& s) {
    v = s.momentum * v - s.learning_rate * g;
    p += s.nesterov ? s.momentum * v - s.learning_rate * g : v;
}

// RMSprop with Keras' formula: v = rho v + (1 - rho) g^2 (centered: also
// mg = rho mg + (1 - rho) g, and v - mg^2 in the root), step = lr g /
// sqrt(v + epsilon); with momentum, mom = momentum mom + step and p -= mom,
// else p -= step. AdamW-style decay first when decay > 0 (lr * weight_decay).
struct RmspropParams {
    float learning_rate, rho, momentum, epsilon, decay;
    int32_t centered;  // an int: the struct is uploaded as bytes
};
GPUTRAIN_HD void rmsprop_update(float& p, float g, float& v, float* mom, float* mean_grad, const RmspropParams& r) {
    p -= r.decay * p;
    v = r.rho * v + (1.0f - r.rho) * g * g;
    float denominator = v + r.epsilon;
    if (r.centered) {
        *mean_grad = r.rho * *mean_grad + (1.0f - r.rho) * g;
        denominator = v - *mean_grad * *mean_grad + r.epsilon;
    }
    const float step = r.learning_rate * g / sqrtf(denominator);
    if (mom) {
        *mom = r.momentum * *mom + step;
        p -= *mom;
    } else {
        p -= step;
    }
}

// Batch normalization (Backend::batch_norm_*). Statistics come from the sums
// of x and x^2 over `count` rows, so replicas can all-reduce the sums first
// (synchronized BN). The variance is the biased one, clamped at 0 (rounding in
// E[x^2] - E[x]^2 can make it slightly negative), formed in double because
// that subtraction cancels; the moving variance takes the unbiased one.
struct BatchNormStatistics {
    float mean, invstd, unbiased_var;
};
// `sum` and `sum_squares` are of x - shift (batch_norm_sums).
GPUTRAIN_HD BatchNormStatistics batch_norm_statistics(float sum, float sum_squares, float count, float eps,
                                                      float shift) {
    const double shifted_mean = static_cast<double>(sum) / count;
    double var = static_cast<double>(sum_squares) / count - shifted_mean * shifted_mean;
    if (var < 0.0) var = 0.0;
    const double unbiased = count > 1.0f ? var * count / (count - 1.0) : var;
    return {static_cast<float>(shift + shifted_mean), static_cast<float>(1.0 / sqrt(var + eps)),
            static_cast<float>(unbiased)};
}
// Keras' convention: momentum weighs the old value.
GPUTRAIN_HD float moving_average(float moving, float batch_value, float momentum) {
    return momentum * moving + (1.0f - momentum) * batch_value;
}
GPUTRAIN_HD float batch_norm_output(float x, float mean, float invstd, float gamma, float beta) {
    return gamma * ((x - mean) * invstd) + beta;
}
// dx from dy, xhat = (x - mean) * invstd, gamma * invstd, and the means over
// the rows of dy and dy * xhat.
GPUTRAIN_HD float batch_norm_input_grad(float dy, float xhat, float gamma_invstd, float mean_dy, float mean_dy_xhat) {
    return gamma_invstd * (dy - mean_dy - xhat * mean_dy_xhat);
}

// The losses against an integer label, one row of `cols` outputs at a time
// (Backend::softmax_cross_entropy, cross_entropy_probs, mean_squared_error):
// each backend walks the rows its own way (a loop, a warp per row) and
// evaluates these. The data loader rejects labels outside [0, classes); a
// label that gets here out of range anyway makes the row's loss NaN on both
// backends, and is read nowhere.
GPUTRAIN_HD bool label_in_range(int label, int cols) { return label >= 0 && label < cols; }

// Softmax cross-entropy from logits z: with m = max z and S = sum exp(z - m),
// the loss is log S - (z_label - m) and dL/dz_c = exp(z_c - m) / S - [c = label],
// both times grad_scale (1 / the global batch, times any loss scale).
GPUTRAIN_HD double softmax_xent_loss(double sum_exp, float z_label, float max_z) {
    return log(sum_exp) - static_cast<double>(z_label - max_z);
}
GPUTRAIN_HD float softmax_xent_grad_from_exp(float e, float inv_sum_exp, bool is_label, float grad_scale) {
    const float g = e * inv_sum_exp * grad_scale;  // e = exp(z - m)
    return is_label ? g - grad_scale : g;
}
GPUTRAIN_HD float softmax_xent_grad(float z, float max_z, float inv_sum_exp, bool is_label, float grad_scale) {
    return softmax_xent_grad_from_exp(expf(z - max_z), inv_sum_exp, is_label, grad_scale);
}

// Label smoothing eps (Keras' and PyTorch's label_smoothing): the target row
// is (1 - eps) at the label plus eps / cols at every class. From logits, with
// T = sum_c (z_c - m), the loss is log S - (1 - eps)(z_label - m) - eps T / cols
// and dL/dz_c = softmax_c - target_c (times grad_scale). Backends call these
// only for eps > 0, the functions above for eps = 0.
GPUTRAIN_HD float smoothed_target(bool is_label, float eps, int cols) {
    return (is_label ? 1.0f - eps : 0.0f) + eps / static_cast<float>(cols);
}
GPUTRAIN_HD double smoothed_xent_loss(double sum_exp, float z_label, float max_z, double sum_shifted, float eps,
                                      int cols) {
    return log(sum_exp) - (1.0 - static_cast<double>(eps)) * static_cast<double>(z_label - max_z) -
           static_cast<double>(eps) * sum_shifted / static_cast<double>(cols);
}
GPUTRAIN_HD float smoothed_xent_grad_from_exp(float e, float inv_sum_exp, bool is_label, float eps, int cols,
                                              float grad_scale) {
    return (e * inv_sum_exp - smoothed_target(is_label, eps, cols)) * grad_scale;
}
GPUTRAIN_HD float smoothed_xent_grad(float z, float max_z, float inv_sum_exp, bool is_label, float eps, int cols,
                                     float grad_scale) {
    return smoothed_xent_grad_from_exp(expf(z - max_z), inv_sum_exp, is_label, eps, cols, grad_scale);
}

// Cross-entropy of probabilities p (a softmax layer's output, from_logits:
// false): -log(clip(p_label)) with Keras' clip to [1e-7, 1 - 1e-7], whose
// gradient is zero outside the clip range. The clip is spelled out so that a
// NaN probability stays NaN (as std::min(std::max(p, eps), 1 - eps)).
inline constexpr float kProbabilityEpsilon = 1e-7f;
GPUTRAIN_HD float clip_probability(float p) {
    const float lower = p < kProbabilityEpsilon ? kProbabilityEpsilon : p;
    return (1.0f - kProbabilityEpsilon) < lower ? 1.0f - kProbabilityEpsilon : lower;
}
GPUTRAIN_HD double probs_xent_loss(float p_label) { return -log(static_cast<double>(clip_probability(p_label))); }
GPUTRAIN_HD float probs_xent_grad(float p_label, bool is_label, float grad_scale) {
    const bool inside = p_label > kProbabilityEpsilon && p_label < 1.0f - kProbabilityEpsilon;
    return is_label && inside ? -grad_scale / p_label : 0.0f;
}

// With label smoothing eps > 0: the loss is -sum_c target_c log(clip(p_c)),
// a sum the backend accumulates over the row from these terms, and
// dL/dp_c = -target_c / p_c inside the clip range (0 outside).
GPUTRAIN_HD double smoothed_probs_xent_term(float p, bool is_label, float eps, int cols) {
    return -static_cast<double>(smoothed_target(is_label, eps, cols)) * log(static_cast<double>(clip_probability(p)));
}
GPUTRAIN_HD float smoothed_probs_xent_grad(float p, bool is_label, float eps, int cols, float grad_scale) {
    const bool inside = p > kProbabilityEpsilon && p < 1.0f - kProbabilityEpsilon;
    return inside ? -grad_scale * smoothed_target(is_label, eps, cols) / p : 0.0f;
}

// Mean squared error against the one-hot label, averaged over the row:
// the row's loss is sum_c diff_c^2 / cols and dL/dy_c = 2 diff_c / cols.
GPUTRAIN_HD float mse_diff(float y, bool is_label) { return y - (is_label ? 1.0f : 0.0f); }
GPUTRAIN_HD float mse_grad(float diff, int cols, float grad_scale) { return 2.0f * diff / cols * grad_scale; }

// Losses against real-valued targets (regression): each output y_c of a row
// of `cols` against its target t_c, diff = y_c - t_c. The row's loss is the
// mean of the elements' terms over the row (Keras' reduction over the last
// axis); d(row loss)/dy_c is term'(diff) / cols. Huber (Keras' definition):
// diff^2 / 2 where |diff| <= delta, else delta * |diff| - delta^2 / 2. The
// derivative of |diff| at 0 is 0 (TensorFlow's sign(0)).
enum class RegressionLoss : int { mean_squared_error, mean_absolute_error, huber };
// The metric a regression run reports beside its loss: the row's mean
// absolute or squared error (none: 0).
enum class RegressionMetric : int { none, mae, mse };
GPUTRAIN_HD float regression_term(RegressionLoss kind, float diff, float delta) {
    const float a = fabsf(diff);
    switch (kind) {
        case RegressionLoss::mean_squared_error: return diff * diff;
        case RegressionLoss::mean_absolute_error: return a;
        case RegressionLoss::huber: return a <= delta ? 0.5f * diff * diff : delta * a - 0.5f * delta * delta;
    }
    return 0.0f;
}
GPUTRAIN_HD float sign_of(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }
GPUTRAIN_HD float regression_grad(RegressionLoss kind, float diff, float delta, int cols, float grad_scale) {
    float g = 0.0f;
    switch (kind) {
        case RegressionLoss::mean_squared_error: g = 2.0f * diff; break;
        case RegressionLoss::mean_absolute_error: g = sign_of(diff); break;
        case RegressionLoss::huber: g = fabsf(diff) <= delta ? diff : delta * sign_of(diff); break;
    }
    return g / cols * grad_scale;
}
GPUTRAIN_HD float regression_metric_term(RegressionMetric metric, float diff) {
    return metric == RegressionMetric::mae ? fabsf(diff) : metric == RegressionMetric::mse ? diff * diff : 0.0f;
}

}  // namespace gputrain::math
