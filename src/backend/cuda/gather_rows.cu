// gather_rows: a batch gathered from a data set resident on the device, row
// r of dst = row indices[r] of src, in 32-bit words (floats or int32 labels
// alike: a bit copy).
#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/kernels.hpp"

namespace gputrain::cuda_kernels {

namespace {

__global__ void gather_rows_kernel(uint32_t* dst, const uint32_t* src, const int32_t* indices, size_t rows,
                                   size_t row_words) {
    const size_t n = rows * row_words;
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        const size_t r = i / row_words, w = i % row_words;
        dst[i] = src[static_cast<size_t>(indices[r]) * row_words + w];
    }
}

}  // namespace

cudaError_t gather_rows(cudaStream_t stream, void* dst, const void* src, const int32_t* indices, int rows,
                        size_t row_words) {
    const size_t n = elements(rows, row_words);
    if (n == 0) return cudaSuccess;
    gather_rows_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(
        static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), indices, static_cast<size_t>(rows), row_words);
    return cudaGetLastError();
}

}  // namespace gputrain::cuda_kernels
