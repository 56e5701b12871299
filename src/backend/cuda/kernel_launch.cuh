// Launch geometry shared by the .cu files of the CUDA backend: grid-stride
// loops over 1-D index spaces and one warp per matrix row.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

namespace gputrain::cuda_kernels {

constexpr int kBlockThreads = 256;
constexpr int kWarpSize = 32;
constexpr int kWarpsPerBlock = kBlockThreads / kWarpSize;
// Enough blocks to fill every SM of an H200 many times over; grid-stride loops
// cover any larger size, so the grid never exceeds the launch limits.
constexpr size_t kMaxBlocks = 4096;

// The number of elements of an array of these extents: 0 (nothing to launch)
// when any is zero or negative, so that a negative count never turns into a
// huge unsigned size.
template <class... Extents>
inline size_t elements(Extents... extents) {
    if (!((extents > 0) && ...)) return 0;
    return (static_cast<size_t>(extents) * ...);
}

// Blocks for `items` work items when each block covers `items_per_block` of them.
inline unsigned blocks_for(size_t items, size_t items_per_block = kBlockThreads) {
    return static_cast<unsigned>(std::min(kMaxBlocks, (items + items_per_block - 1) / items_per_block));
}

__device__ __forceinline__ size_t thread_index() {
    return static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ size_t thread_count() { return static_cast<size_t>(gridDim.x) * blockDim.x; }

// Warp-per-row kernels: warp w of the grid handles rows w, w + warp_count(), ...
__device__ __forceinline__ int warp_index() { return static_cast<int>(thread_index() / kWarpSize); }
__device__ __forceinline__ int warp_count() { return static_cast<int>(thread_count() / kWarpSize); }
__device__ __forceinline__ int lane_index() { return static_cast<int>(threadIdx.x % kWarpSize); }

// One grid-stride launch over n items; nothing is launched for n == 0.
template <class... Params, class... Args>
cudaError_t launch_1d(cudaStream_t stream, size_t n, void (*kernel)(Params...), Args... args) {
    if (n == 0) return cudaSuccess;
    kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(args...);
    return cudaGetLastError();
}

}  // namespace gputrain::cuda_kernels
