// The 16-bit input copies of a GEMM under training.cast_gemm_inputs: each
// float rounded to the nearest bfloat16 or IEEE half (ties to even), as
// PyTorch's autocast casts do. Out-of-range values become +-inf in half, as
// in the GEMM's own rounding; fp16 loss scaling then skips the step.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/kernels.hpp"

namespace gputrain::cuda_kernels {

namespace {

__global__ void cast_bf16_kernel(const float* x, __nv_bfloat16* y, size_t n) {
    for (size_t i = thread_index(); i < n; i += thread_count()) y[i] = __float2bfloat16_rn(x[i]);
}

__global__ void cast_fp16_kernel(const float* x, __half* y, size_t n) {
    for (size_t i = thread_index(); i < n; i += thread_count()) y[i] = __float2half_rn(x[i]);
}

}  // namespace

cudaError_t cast_to_bf16(cudaStream_t stream, const float* x, void* y, size_t n) {
    return launch_1d(stream, n, cast_bf16_kernel, x, static_cast<__nv_bfloat16*>(y), n);
}

cudaError_t cast_to_fp16(cudaStream_t stream, const float* x, void* y, size_t n) {
    return launch_1d(stream, n, cast_fp16_kernel, x, static_cast<__half*>(y), n);
}

}  // namespace gputrain::cuda_kernels
