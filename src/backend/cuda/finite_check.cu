// count_nonfinite: one flag per block that meets a NaN or Inf (the count is
// only ever compared with zero, so one atomic per block is enough);
// check_finite folds that count into the guard words on the device
// (math::tally_finite), so the host need not wait for it.
#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/kernels.hpp"

namespace gputrain::cuda_kernels {

namespace {

__global__ void count_nonfinite_kernel(const float* x, size_t n, int* count) {
    int bad = 0;
    for (size_t i = thread_index(); i < n; i += thread_count()) bad |= !isfinite(x[i]);
    if (__syncthreads_or(bad) && threadIdx.x == 0) atomicAdd(count, 1);
}

__global__ void tally_count_kernel(const int* count, int32_t* guard) { math::tally_finite(guard, *count == 0); }

__global__ void tally_verdict_kernel(int32_t* guard, bool finite) { math::tally_finite(guard, finite); }

}  // namespace

cudaError_t check_finite(cudaStream_t stream, const float* x, size_t n, int* scratch, int32_t* guard) {
    cudaError_t status = cudaMemsetAsync(scratch, 0, sizeof(int), stream);
    if (status != cudaSuccess) return status;
    if (n > 0) count_nonfinite_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(x, n, scratch);
    tally_count_kernel<<<1, 1, 0, stream>>>(scratch, guard);
    return cudaGetLastError();
}

cudaError_t record_finite(cudaStream_t stream, int32_t* guard, bool finite) {
    tally_verdict_kernel<<<1, 1, 0, stream>>>(guard, finite);
    return cudaGetLastError();
}

cudaError_t count_nonfinite(cudaStream_t stream, const float* x, size_t n, int* count) {
    if (n == 0) return cudaSuccess;
    count_nonfinite_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(x, n, count);
    return cudaGetLastError();
}

}  // namespace gputrain::cuda_kernels
