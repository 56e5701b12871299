// Element-wise ops of the merge layers, dropout's backward and the graph's
// gradient sums (backend/kernels.hpp says how ops run). Kernels:
// backend/cpu/elementwise_kernels.cpp, backend/cuda/elementwise_kernels.cu.
#pragma once

#include <cstddef>

namespace gputrain::ops {

// out[i] = a[i] * b[i] for i < n; out may be a or b.
struct Multiply {
    static constexpr const char* kName = "multiply";
    const float* a;
    const float* b;
    float* out;
    size_t n;
};

// y[i] += x[i] for i < n: a tensor read by several layers sums their
// gradients; add's forward.
struct Accumulate {
    static constexpr const char* kName = "accumulate";
    float* y;
    const float* x;
    size_t n;
};

// dst[r * ld_dst + c] = src[r * ld_src + c] for r < rows, c < cols: a block of
// columns in or out of a wider matrix (concatenate along the last axis).
struct CopyStrided {
    static constexpr const char* kName = "copy_strided";
    float* dst;
    int ld_dst;
    const float* src;
    int ld_src;
    int rows;
    int cols;
};

}  // namespace gputrain::ops
