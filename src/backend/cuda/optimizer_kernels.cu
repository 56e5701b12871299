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

}  // namespace

void add_optimizers(KernelTable& table) { table.add<ops::RmspropStep, &rmsprop>(); }

}  // namespace gputrain::cuda_kernels
