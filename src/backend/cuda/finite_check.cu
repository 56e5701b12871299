// count_nonfinite: one flag per block that meets a NaN or Inf (the count is
// only ever compared with zero, so one atomic per block is enough).
#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/kernels.hpp"

namespace gputrain::cuda_kernels {

namespace {

__global__ void count_nonfinite_kernel(const float* x, size_t n, int* count) {
    int bad = 0;
    for (size_t i = thread_index(); i < n; i += thread_count()) bad |= !isfinite(x[i]);
    if (__syncthreads_or(bad) && threadIdx.x == 0) atomicAdd(count, 1);
}

}  // namespace

cudaError_t count_nonfinite(cudaStream_t stream, const float* x, size_t n, int* count) {
    if (n == 0) return cudaSuccess;
    count_nonfinite_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(x, n, count);
    return cudaGetLastError();
}

}  // namespace gputrain::cuda_kernels
