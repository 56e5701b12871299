// Batch-normalization kernels of the CUDA backend, on the math.hpp formulas.
// Our own kernels rather than cuDNN's fused batch norm: synchronized BN needs
// the per-replica sums as a separate step (all-reduced between calls), which
// cuDNN's API does not expose. The per-channel sums are column sums
// (column_sums.cuh): deterministic, the same on every run.
#include "backend/cuda/batch_norm_kernels.hpp"
#include "backend/cuda/column_sums.cuh"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/math.hpp"

namespace gputrain::cuda_kernels {

namespace {

// The two pairs of quantities summed per column.
// Around a shift and summed in double, as the CPU sums them: the variance is
// E[d^2] - E[d]^2, which cancels badly when the mean of d is large against
// the spread.
struct ValueAndSquare {  // d = x - shift, d^2
    static constexpr int kCount = 2;
    using Sum = double;
    const float* x;
    const float* shift;  // null: 0
    __device__ void operator()(size_t i, int c, float* v) const {
        const float value = x[i] - (shift ? shift[c] : 0.0f);
        v[0] = value;
        v[1] = value * value;
    }
};
struct GradAndGradXhat {  // dy, dy * xhat
    static constexpr int kCount = 2;
    using Sum = double;
    const float* x;
    const float* dy;
    const float* mean_invstd;
    int channels;
    __device__ void operator()(size_t i, int c, float* v) const {
        const float g = dy[i];
        v[0] = g;
        v[1] = g * ((x[i] - mean_invstd[c]) * mean_invstd[channels + c]);
    }
};

__global__ void finalize_kernel(const float* sums, float count, int channels, float eps, float momentum,
                                const float* shift, float* mean_invstd, float* moving_mean, float* moving_var) {
    for (size_t i = thread_index(); i < static_cast<size_t>(channels); i += thread_count()) {
        // shift may alias moving_mean: read before the update below.
        const math::BatchNormStatistics s =
            math::batch_norm_statistics(sums[i], sums[channels + i], count, eps, shift ? shift[i] : 0.0f);
        mean_invstd[i] = s.mean;
        mean_invstd[channels + i] = s.invstd;
        if (moving_mean) {
            moving_mean[i] = math::moving_average(moving_mean[i], s.mean, momentum);
            moving_var[i] = math::moving_average(moving_var[i], s.unbiased_var, momentum);
        }
    }
}

__global__ void apply_kernel(const float* x, const float* mean_invstd, const float* gamma, const float* beta,
                             float* y, size_t n, int channels) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        const int c = static_cast<int>(i % channels);
        y[i] = math::batch_norm_output(x[i], mean_invstd[c], mean_invstd[channels + c], gamma[c], beta[c]);
    }
}

__global__ void inference_kernel(const float* x, const float* moving_mean, const float* moving_var, float eps,
                                 const float* gamma, const float* beta, float* y, size_t n, int channels) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        const int c = static_cast<int>(i % channels);
        const float invstd = 1.0f / sqrtf(moving_var[c] + eps);
        y[i] = math::batch_norm_output(x[i], moving_mean[c], invstd, gamma[c], beta[c]);
    }
}

__global__ void backward_data_kernel(const float* x, const float* dy, const float* mean_invstd, const float* gamma,
                                     const float* sums, float count, float* dx, size_t n, int channels) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        const int c = static_cast<int>(i % channels);
        const float invstd = mean_invstd[channels + c];
        const float xhat = (x[i] - mean_invstd[c]) * invstd;
        dx[i] = math::batch_norm_input_grad(dy[i], xhat, gamma[c] * invstd, sums[c] / count,
                                            sums[channels + c] / count);
    }
}

}  // namespace

cudaError_t batch_norm_sums(cudaStream_t stream, const float* x, int rows, int channels, const float* shift,
                            float* sums, float* scratch, size_t scratch_floats) {
    return column_sums(stream, ValueAndSquare{x, shift}, rows, channels, sums, scratch, scratch_floats);
}

cudaError_t batch_norm_backward_sums(cudaStream_t stream, const float* x, const float* dy, const float* mean_invstd,
                                     int rows, int channels, float* sums, float* scratch, size_t scratch_floats) {
    return column_sums(stream, GradAndGradXhat{x, dy, mean_invstd, channels}, rows, channels, sums, scratch,
                       scratch_floats);
}

cudaError_t batch_norm_finalize(cudaStream_t stream, const float* sums, float count, int channels, float eps,
                                float momentum, const float* shift, float* mean_invstd, float* moving_mean,
                                float* moving_var) {
    if (channels <= 0) return cudaSuccess;
    finalize_kernel<<<blocks_for(static_cast<size_t>(channels)), kBlockThreads, 0, stream>>>(
        sums, count, channels, eps, momentum, shift, mean_invstd, moving_mean, moving_var);
    return cudaGetLastError();
}

cudaError_t batch_norm_apply(cudaStream_t stream, const float* x, const float* mean_invstd, const float* gamma,
                             const float* beta, float* y, int rows, int channels) {
    const size_t n = elements(rows, channels);
    if (n == 0) return cudaSuccess;
    apply_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(x, mean_invstd, gamma, beta, y, n, channels);
    return cudaGetLastError();
}

cudaError_t batch_norm_inference(cudaStream_t stream, const float* x, const float* moving_mean,
                                 const float* moving_var, float eps, const float* gamma, const float* beta, float* y,
                                 int rows, int channels) {
    const size_t n = elements(rows, channels);
    if (n == 0) return cudaSuccess;
    inference_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(x, moving_mean, moving_var, eps, gamma, beta, y, n,
                                                                  channels);
    return cudaGetLastError();
}

cudaError_t batch_norm_backward_data(cudaStream_t stream, const float* x, const float* dy, const float* mean_invstd,
                                     const float* gamma, const float* sums, float count, float* dx, int rows,
                                     int channels) {
    const size_t n = elements(rows, channels);
    if (n == 0) return cudaSuccess;
    backward_data_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(x, dy, mean_invstd, gamma, sums, count, dx, n,
                                                                      channels);
    return cudaGetLastError();
}

}  // namespace gputrain::cuda_kernels
