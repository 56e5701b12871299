// The CUDA backend's kernels of backend/ops/optimizers.hpp.
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/ops/optimizers.hpp"

namespace gputrain::cuda_kernels {

namespace {

__global__ void rmsprop_kernel(float* params, const float* grads, float* v, float* momentum, float* mean_grad,
                               size_t n, const math::RmspropParams* scalars, const int32_t* skip) {
    if (skip && *skip != 0) return;
    const math::RmspropParams r = *scalars;  // a local copy: stores cannot alias it then
    for (size_t i = thread_index(); i < n; i += thread_count())
        math::rmsprop_update(params[i], grads[i], v[i], momentum ? momentum + i : nullptr,
                             mean_grad ? mean_grad + i : nullptr, r);
}

void rmsprop(Backend& b, const ops::RmspropStep& op) {
    auto& cuda = static_cast<CudaBackend&>(b);
    CUDA_CHECK(cuda.device(), launch_1d(static_cast<cudaStream_t>(cuda.stream_handle()), op.n, rmsprop_kernel,
                                        op.params, op.grads, op.v, op.momentum, op.mean_grad, op.n, op.scalars,
                                        op.skip));
}

// One block sums the squares in a fixed order (each thread a strided part,
// then a tree over the threads): the same bits on every run.
constexpr int kNormThreads = 1024;
__global__ void norm_kernel(const float* grads, size_t n, float* norm_out) {
    __shared__ double partial[kNormThreads];
    double sum = 0.0;
    for (size_t i = threadIdx.x; i < n; i += kNormThreads) sum += static_cast<double>(grads[i]) * grads[i];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = kNormThreads / 2; stride > 0; stride /= 2) {
        if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) norm_out[0] = static_cast<float>(sqrt(partial[0]));
}

__global__ void clip_kernel(float* grads, size_t n, float max_norm, const float* norm) {
    const float f = ops::clip_factor(static_cast<double>(*norm), max_norm);
    if (f == 1.0f) return;
    for (size_t i = thread_index(); i < n; i += thread_count()) grads[i] *= f;
}

void clip_by_global_norm(Backend& b, const ops::ClipByGlobalNorm& op) {
    auto& cuda = static_cast<CudaBackend&>(b);
    const auto stream = static_cast<cudaStream_t>(cuda.stream_handle());
    norm_kernel<<<1, kNormThreads, 0, stream>>>(op.grads, op.n, op.norm_out);
    CUDA_CHECK(cuda.device(), cudaGetLastError());
    CUDA_CHECK(cuda.device(), launch_1d(stream, op.n, clip_kernel, op.grads, op.n, op.max_norm, op.norm_out));
}

__global__ void ema_kernel(float* average, const float* params, size_t n, const float* decay, const int32_t* skip) {
    if (skip && *skip != 0) return;
    const float d = *decay;
    for (size_t i = thread_index(); i < n; i += thread_count()) average[i] = ops::ema_value(average[i], params[i], d);
}

void ema_update(Backend& b, const ops::EmaUpdate& op) {
    auto& cuda = static_cast<CudaBackend&>(b);
    CUDA_CHECK(cuda.device(), launch_1d(static_cast<cudaStream_t>(cuda.stream_handle()), op.n, ema_kernel, op.average,
                                        op.params, op.n, op.decay, op.skip));
}

}  // namespace

void add_optimizers(KernelTable& table) {
    table.add<ops::RmspropStep, &rmsprop>();
    table.add<ops::ClipByGlobalNorm, &clip_by_global_norm>();
    table.add<ops::EmaUpdate, &ema_update>();
}

}  // namespace gputrain::cuda_kernels
