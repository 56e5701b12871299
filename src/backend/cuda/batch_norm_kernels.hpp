// Launchers for the CUDA backend's batch-normalization kernels
// (batch_norm_kernels.cu), one per Backend::batch_norm_* method, same
// arguments. Same conventions as kernels.hpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gputrain::cuda_kernels {

// Column sums reduce over row chunks into `scratch` (scratch_floats floats of
// device memory the backend owns), then add the chunks in a fixed order:
// deterministic, no atomics. Fewer chunks are used when scratch is short.
cudaError_t batch_norm_sums(cudaStream_t stream, const float* x, int rows, int channels, const float* shift,
                            float* sums, float* scratch, size_t scratch_floats);
cudaError_t batch_norm_backward_sums(cudaStream_t stream, const float* x, const float* dy, const float* mean_invstd,
                                     int rows, int channels, float* sums, float* scratch, size_t scratch_floats);
// moving_mean and moving_var may be null (no moving update).
cudaError_t batch_norm_finalize(cudaStream_t stream, const float* sums, float count, int channels, float eps,
                                float momentum, const float* shift, float* mean_invstd, float* moving_mean,
                                float* moving_var);
cudaError_t batch_norm_apply(cudaStream_t stream, const float* x, const float* mean_invstd, const float* gamma,
                             const float* beta, float* y, int rows, int channels);
cudaError_t batch_norm_inference(cudaStream_t stream, const float* x, const float* moving_mean,
                                 const float* moving_var, float eps, const float* gamma, const float* beta, float* y,
                                 int rows, int channels);
cudaError_t batch_norm_backward_data(cudaStream_t stream, const float* x, const float* dy, const float* mean_invstd,
                                     const float* gamma, const float* sums, float count, float* dx, int rows,
                                     int channels);

}  // namespace gputrain::cuda_kernels
