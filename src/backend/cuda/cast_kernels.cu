// The 16-bit input copies of a GEMM under training.cast_gemm_inputs: each
// float rounded to the nearest bfloat16 or IEEE half (ties to even), as
// PyTorch's autocast casts do. Out-of-range values become +-inf in half, as
// in the GEMM's own rounding; fp16 loss scaling then skips the step.
//
// A cast reads 4 bytes and writes 2 per element and does nothing else, so it
// runs at memory speed only with wide accesses: where both arrays start on a
// 16- and 8-byte boundary (every copy a layer keeps, and a kernel whose
// offset in the flat parameters is a multiple of 4), each thread moves four
// elements at a time (one float4 in, 8 bytes out), with the same rounding
// per element; otherwise one element at a time.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/kernels.hpp"

namespace gputrain::cuda_kernels {

namespace {

__device__ __forceinline__ uint16_t rounded_bits(__nv_bfloat16*, float x) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}
__device__ __forceinline__ uint16_t rounded_bits(__half*, float x) { return __half_as_ushort(__float2half_rn(x)); }

template <class T>
__global__ void cast_kernel(const float* x, T* y, size_t n) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        const uint16_t bits = rounded_bits(static_cast<T*>(nullptr), x[i]);
        reinterpret_cast<uint16_t*>(y)[i] = bits;
    }
}

// n4 groups of four elements, then the n % 4 left over.
template <class T>
__global__ void cast4_kernel(const float4* x, uint2* y, size_t n4, const float* tail_x, T* tail_y, size_t tail) {
    for (size_t i = thread_index(); i < n4; i += thread_count()) {
        const float4 v = x[i];
        T* const tag = nullptr;
        const uint32_t lo = rounded_bits(tag, v.x) | (static_cast<uint32_t>(rounded_bits(tag, v.y)) << 16);
        const uint32_t hi = rounded_bits(tag, v.z) | (static_cast<uint32_t>(rounded_bits(tag, v.w)) << 16);
        y[i] = make_uint2(lo, hi);
    }
    const size_t t = thread_index();
    if (t < tail) reinterpret_cast<uint16_t*>(tail_y)[t] = rounded_bits(static_cast<T*>(nullptr), tail_x[t]);
}

bool aligned(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }

template <class T>
cudaError_t cast(cudaStream_t stream, const float* x, void* y, size_t n) {
    if (n == 0) return cudaSuccess;
    T* out = static_cast<T*>(y);
    if (!aligned(x, 16) || !aligned(y, 8) || n < 4) return launch_1d(stream, n, cast_kernel<T>, x, out, n);
    const size_t n4 = n / 4, tail = n % 4;
    cast4_kernel<T><<<blocks_for(n4), kBlockThreads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), static_cast<uint2*>(y), n4, x + 4 * n4, out + 4 * n4, tail);
    return cudaGetLastError();
}

}  // namespace

cudaError_t cast_to_bf16(cudaStream_t stream, const float* x, void* y, size_t n) {
    return cast<__nv_bfloat16>(stream, x, y, n);
}

cudaError_t cast_to_fp16(cudaStream_t stream, const float* x, void* y, size_t n) { return cast<__half>(stream, x, y, n); }

}  // namespace gputrain::cuda_kernels
