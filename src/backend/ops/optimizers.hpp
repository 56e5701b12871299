// Optimizer updates outside the Backend interface (backend/kernels.hpp).
// Kernels: backend/cpu/optimizer_kernels.cpp, backend/cuda/optimizer_kernels.cu.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/math.hpp"

namespace gputrain::ops {

// RMSprop (math::rmsprop_update) over n parameters, its scalars read from
// backend memory when the kernel runs (written by upload(), so that a replayed
// graph takes each step's); nothing changes when skip is not null and *skip != 0.
// momentum (with RmspropParams::momentum > 0) and mean_grad (centered) may be null.
struct RmspropStep {
    static constexpr const char* kName = "rmsprop_step";
    float* params;
    const float* grads;
    float* v;
    float* momentum;
    float* mean_grad;
    size_t n;
    const math::RmspropParams* scalars;
    const int32_t* skip;
};

// training.clip_norm, PyTorch's clip_grad_norm_: with norm the L2 norm of
// grads[0, n) (summed in double, in a fixed order), every gradient is
// multiplied by max_norm / (norm + 1e-6) when that is below 1. A norm that is
// not finite leaves them as they are (the step guard reports it). norm_out
// (backend memory, one float) receives the norm before clipping.
struct ClipByGlobalNorm {
    static constexpr const char* kName = "clip_by_global_norm";
    float* grads;
    size_t n;
    float max_norm;
    float* norm_out;
};

// training.ema: average = decay * average + (1 - decay) * params (Keras'
// formula; PyTorch's EMA lerp is the same up to rounding), skipped with the
// step; decay (backend memory, one float) is 0 to copy the weights.
struct EmaUpdate {
    static constexpr const char* kName = "ema_update";
    float* average;
    const float* params;
    size_t n;
    const float* decay;
    const int32_t* skip;
};
GPUTRAIN_HD float ema_value(float average, float param, float decay) {
    return decay * average + (1.0f - decay) * param;
}

// The clip factor of a norm (math shared by the kernels).
GPUTRAIN_HD float clip_factor(double norm, float max_norm) {
    const double f = static_cast<double>(max_norm) / (norm + 1e-6);
    return (f < 1.0 && norm == norm && norm < 1e300) ? static_cast<float>(f) : 1.0f;
}

}  // namespace gputrain::ops
