// Per-row normalization ops of the layer_norm and rms_norm layers
// (backend/kernels.hpp says how ops run). Kernels:
// backend/cpu/normalization_kernels.cpp, backend/cuda/normalization_kernels.cu.
//
// x is a row-major [rows, cols] matrix; each row is normalized on its own:
//   layer norm: xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + epsilon),
//               var = mean((x - mean)^2) (biased, as Keras and PyTorch)
//   rms norm:   xhat = x * rstd,          rstd = 1 / sqrt(mean(x^2) + epsilon)
//   y = xhat * gamma + beta  (gamma, beta per column)
// The row statistics are summed in double on both backends.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace gputrain::ops {

// y = the normalized x; writes each row's statistics for the backward pass:
// mean[r] (layer norm only) and rstd[r]. y may not be x.
struct LayerNormForward {
    static constexpr const char* kName = "layer_norm_forward";
    const float* x;
    const float* gamma;  // [cols]; null: 1
    const float* beta;   // [cols]; null: 0
    float* y;
    float* mean;  // [rows]; ignored (may be null) with rms
    float* rstd;  // [rows]
    int rows;
    int cols;
    float epsilon;
    bool rms;
};

// From dy and the forward's statistics (x, mean, rstd as LayerNormForward
// left them), each output that is not null, overwritten:
//   dx     = rstd * (g - mean_row(g) - xhat * mean_row(g * xhat)), g = dy * gamma
//            (rms: without the mean_row(g) term)
//   dgamma = sum over rows of dy * xhat
//   dbeta  = sum over rows of dy
// The column sums are in a fixed order (the same bits every run). `scratch`
// (scratch_floats floats of backend memory, aligned for double as the
// backends' allocations are) lets a GPU split them into chunks of rows; any
// amount works, 0 included (layer_norm_backward_scratch_floats says how much
// it can use). dx may not be dy.
struct LayerNormBackward {
    static constexpr const char* kName = "layer_norm_backward";
    const float* x;
    const float* dy;
    const float* mean;   // ignored with rms
    const float* rstd;
    const float* gamma;  // null: 1
    float* dx;           // null: not wanted
    float* dgamma;       // null: not wanted
    float* dbeta;        // null: not wanted
    int rows;
    int cols;
    bool rms;
    float* scratch;
    size_t scratch_floats;
};

// The scratch floats with which the CUDA kernels split LayerNormBackward's
// column sums of a [rows, cols] matrix into as many chunks of rows as they
// would use (column_sums.cuh: chunks of at least 64 rows, about 512 blocks of
// 32 columns; the sums kept in double). 0 when one chunk would do.
inline size_t layer_norm_backward_scratch_floats(int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0) return 0;
    const int64_t tiles = (cols + 31) / 32;
    const int64_t chunks = std::min(std::max<int64_t>(1, rows / 64), std::max<int64_t>(1, 512 / tiles));
    if (chunks <= 1) return 0;
    return static_cast<size_t>(chunks * cols) * (sizeof(double) / sizeof(float));
}

}  // namespace gputrain::ops
