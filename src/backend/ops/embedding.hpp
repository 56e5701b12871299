// The embedding layer's lookups (nn/embedding.cpp). Kernels:
// backend/cpu/embedding_kernels.cpp, backend/cuda/embedding_kernels.cu.
#pragma once

#include <cstddef>

namespace gputrain::ops {

// y[n, :] = table[ids[n], :] for n < count; ids are token ids held as floats
// (exact below 2^24). An id outside [0, vocab) gives a row of NaN, which the
// loss and the step guard then report.
struct EmbeddingLookup {
    static constexpr const char* kName = "embedding_lookup";
    const float* ids;
    const float* table;
    float* y;
    size_t count;
    int vocab;
    int dim;
};

// d_table[v, :] = sum of dy[n, :] over the n with ids[n] == v (overwrites the
// whole vocab x dim table; ids outside [0, vocab) add nothing). Summed in the
// order of n, so the result is the same bits on every run. With `accumulate`
// the sums are added to what d_table holds (a table that is also a tied
// dense layer's kernel: that layer's gradient is there already).
struct EmbeddingGrad {
    static constexpr const char* kName = "embedding_grad";
    const float* ids;
    const float* dy;
    float* d_table;
    size_t count;
    int vocab;
    int dim;
    bool accumulate = false;
};

}  // namespace gputrain::ops
