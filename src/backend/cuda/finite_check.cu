// count_nonfinite: one flag per block that meets a NaN or Inf (the count is
// only ever compared with zero, so one atomic per block is enough).
// check_finite does the same and folds the verdict into the guard words
// (math::tally_finite) in the same launch: the last block to finish, counted
// in state[1], reads state[0] and zeroes both for the next call. So the host
// need not wait, and a recorded step holds one node for the check, not three.
#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/kernels.hpp"

namespace gputrain::cuda_kernels {

namespace {

// Whether this block's share of x holds a NaN or Inf (every thread gets the
// answer; every thread of the block must call it).
__device__ bool block_saw_nonfinite(const float* x, size_t n) {
    int bad = 0;
    for (size_t i = thread_index(); i < n; i += thread_count()) bad |= !isfinite(x[i]);
    return __syncthreads_or(bad) != 0;
}

__global__ void count_nonfinite_kernel(const float* x, size_t n, int* count) {
    if (block_saw_nonfinite(x, n) && threadIdx.x == 0) atomicAdd(count, 1);
}

__global__ void check_finite_kernel(const float* x, size_t n, int* state, int32_t* guard) {
    const bool block_bad = block_saw_nonfinite(x, n);
    if (threadIdx.x != 0) return;
    if (block_bad) atomicAdd(&state[0], 1);
    // This block's flag is visible to every block before its arrival is counted.
    __threadfence();
    const int arrived = atomicAdd(&state[1], 1) + 1;
    if (arrived != static_cast<int>(gridDim.x)) return;
    __threadfence();
    const int bad_blocks = atomicAdd(&state[0], 0);  // read through the atomics' coherence point
    math::tally_finite(guard, bad_blocks == 0);
    state[0] = 0;
    state[1] = 0;
}

__global__ void tally_verdict_kernel(int32_t* guard, bool finite) { math::tally_finite(guard, finite); }

}  // namespace

cudaError_t check_finite(cudaStream_t stream, const float* x, size_t n, int* state, int32_t* guard) {
    // At least one block, so that the tally happens for n == 0 too.
    check_finite_kernel<<<std::max(1u, blocks_for(n)), kBlockThreads, 0, stream>>>(x, n, state, guard);
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
