// CpuBackend batch normalization over a [rows, channels] matrix, with the
// formulas the CUDA kernels share (math.hpp). Per-channel sums accumulate in
// double (rows = batch * height * width can be large); channels are taken in
// blocks so the accumulators live on the stack and rows are read in order.
#include "backend/cpu/cpu_backend.hpp"

#include <algorithm>
#include <cmath>

namespace gputrain {

namespace {

constexpr int kChannelBlock = 256;

}  // namespace

void CpuBackend::batch_norm_sums(const float* x, int rows, int channels, const float* shift, float* sums) {
    for (int c0 = 0; c0 < channels; c0 += kChannelBlock) {
        const int width = std::min(kChannelBlock, channels - c0);
        double sum[kChannelBlock] = {}, sum_sq[kChannelBlock] = {};
        float shift_of[kChannelBlock] = {};
        if (shift) std::copy(shift + c0, shift + c0 + width, shift_of);
        for (int r = 0; r < rows; ++r) {
            const float* row = x + static_cast<size_t>(r) * channels + c0;
            for (int c = 0; c < width; ++c) {
                // d and d^2 rounded to float as the CUDA kernel does, then
                // summed in double: both backends see the same terms.
                const float v = row[c] - shift_of[c];
                sum[c] += v;
                sum_sq[c] += v * v;
            }
        }
        for (int c = 0; c < width; ++c) {
            sums[c0 + c] = static_cast<float>(sum[c]);
            sums[channels + c0 + c] = static_cast<float>(sum_sq[c]);
        }
    }
}

void CpuBackend::batch_norm_finalize(const float* sums, float count, int channels, float eps, float momentum,
                                     const float* shift, float* mean_invstd, float* moving_mean, float* moving_var) {
    for (int c = 0; c < channels; ++c) {
        const math::BatchNormStatistics s =
            math::batch_norm_statistics(sums[c], sums[channels + c], count, eps, shift ? shift[c] : 0.0f);
        mean_invstd[c] = s.mean;
        mean_invstd[channels + c] = s.invstd;
        if (moving_mean) {
            moving_mean[c] = math::moving_average(moving_mean[c], s.mean, momentum);
            moving_var[c] = math::moving_average(moving_var[c], s.unbiased_var, momentum);
        }
    }
}

void CpuBackend::batch_norm_apply(const float* x, const float* mean_invstd, const float* gamma, const float* beta,
                                  float* y, int rows, int channels) {
    const float* mean = mean_invstd;
    const float* invstd = mean_invstd + channels;
    for (int r = 0; r < rows; ++r) {
        const float* in = x + static_cast<size_t>(r) * channels;
        float* out = y + static_cast<size_t>(r) * channels;
        for (int c = 0; c < channels; ++c)
            out[c] = math::batch_norm_output(in[c], mean[c], invstd[c], gamma[c], beta[c]);
    }
}

void CpuBackend::batch_norm_inference(const float* x, const float* moving_mean, const float* moving_var, float eps,
                                      const float* gamma, const float* beta, float* y, int rows, int channels) {
    for (int c0 = 0; c0 < channels; c0 += kChannelBlock) {
        const int width = std::min(kChannelBlock, channels - c0);
        float invstd[kChannelBlock];
        for (int c = 0; c < width; ++c) invstd[c] = 1.0f / std::sqrt(moving_var[c0 + c] + eps);
        for (int r = 0; r < rows; ++r) {
            const float* in = x + static_cast<size_t>(r) * channels + c0;
            float* out = y + static_cast<size_t>(r) * channels + c0;
            for (int c = 0; c < width; ++c)
                out[c] = math::batch_norm_output(in[c], moving_mean[c0 + c], invstd[c], gamma[c0 + c], beta[c0 + c]);
        }
    }
}

void CpuBackend::batch_norm_backward_sums(const float* x, const float* dy, const float* mean_invstd, int rows,
                                          int channels, float* sums) {
    const float* mean = mean_invstd;
    const float* invstd = mean_invstd + channels;
    for (int c0 = 0; c0 < channels; c0 += kChannelBlock) {
        const int width = std::min(kChannelBlock, channels - c0);
        double sum_dy[kChannelBlock] = {}, sum_dy_xhat[kChannelBlock] = {};
        for (int r = 0; r < rows; ++r) {
            const size_t at = static_cast<size_t>(r) * channels + c0;
            for (int c = 0; c < width; ++c) {
                const double g = dy[at + c];
                sum_dy[c] += g;
                sum_dy_xhat[c] += g * ((x[at + c] - mean[c0 + c]) * invstd[c0 + c]);
            }
        }
        for (int c = 0; c < width; ++c) {
            sums[c0 + c] = static_cast<float>(sum_dy[c]);
            sums[channels + c0 + c] = static_cast<float>(sum_dy_xhat[c]);
        }
    }
}

void CpuBackend::batch_norm_backward_data(const float* x, const float* dy, const float* mean_invstd,
                                          const float* gamma, const float* sums, float count, float* dx, int rows,
                                          int channels) {
    const float* mean = mean_invstd;
    const float* invstd = mean_invstd + channels;
    for (int c0 = 0; c0 < channels; c0 += kChannelBlock) {
        const int width = std::min(kChannelBlock, channels - c0);
        // Per-channel factors once, not a division per element.
        float gamma_invstd[kChannelBlock], mean_dy[kChannelBlock], mean_dy_xhat[kChannelBlock];
        for (int c = 0; c < width; ++c) {
            gamma_invstd[c] = gamma[c0 + c] * invstd[c0 + c];
            mean_dy[c] = sums[c0 + c] / count;
            mean_dy_xhat[c] = sums[channels + c0 + c] / count;
        }
        for (int r = 0; r < rows; ++r) {
            const size_t at = static_cast<size_t>(r) * channels + c0;
            for (int c = 0; c < width; ++c) {
                const float xhat = (x[at + c] - mean[c0 + c]) * invstd[c0 + c];
                dx[at + c] =
                    math::batch_norm_input_grad(dy[at + c], xhat, gamma_invstd[c], mean_dy[c], mean_dy_xhat[c]);
            }
        }
    }
}

}  // namespace gputrain
