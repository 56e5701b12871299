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

}  // namespace gputrain::ops
