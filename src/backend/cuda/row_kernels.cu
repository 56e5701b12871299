// Row-wise kernels of the CUDA backend: softmax and the losses. One warp per
// row (lanes stride over the columns, shuffles reduce), grid-stride over rows.
// The losses follow CpuBackend line by line: the per-row sums and logs in
// double, the gradients in float, argmax ties to the lowest column.
#include <cmath>
#include <climits>

#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/kernels.hpp"

namespace gputrain::cuda_kernels {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
    return v;
}

struct ArgMax {
    float value;
    int index;
};

// The largest entry of the row and its first column; every lane gets the
// same answer. NaNs as the CPU's scan treats them: a NaN in column 0 wins
// (nothing compares greater), any later NaN is passed over.
__device__ ArgMax warp_argmax(const float* row, int cols, int lane) {
    if (cols > 0 && isnan(row[0])) return {row[0], 0};
    ArgMax best{-INFINITY, INT_MAX};
    for (int c = lane; c < cols; c += kWarpSize) {
        const float v = row[c];
        if (isnan(v)) continue;
        if (best.index == INT_MAX || v > best.value) best = {v, c};
    }
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        const float other_value = __shfl_xor_sync(kFullMask, best.value, offset);
        const int other_index = __shfl_xor_sync(kFullMask, best.index, offset);
        if (other_value > best.value || (other_value == best.value && other_index < best.index))
            best = {other_value, other_index};
    }
    return best;
}

// Adds this block's loss sum and second sum (a correct count, int; or a
// regression metric, double) to stats[0] and stats[1]. `loss` and `second`
// are the calling warp's totals, read from lane 0. Every thread of the block
// must call it (it has a barrier).
template <class Second>
__device__ void add_block_stats(double loss, Second second, float* stats) {
    __shared__ double warp_loss[kWarpsPerBlock];
    __shared__ Second warp_second[kWarpsPerBlock];
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    if (lane_index() == 0) {
        warp_loss[warp] = loss;
        warp_second[warp] = second;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double block_loss = 0.0;
        Second block_second = 0;
        for (int w = 0; w < kWarpsPerBlock; ++w) {
            block_loss += warp_loss[w];
            block_second += warp_second[w];
        }
        // Blocks finish in any order: the float sum may differ in the last bit between runs.
        atomicAdd(&stats[0], static_cast<float>(block_loss));
        atomicAdd(&stats[1], static_cast<float>(block_second));
    }
}

__global__ void softmax_forward_kernel(const float* x, float* y, int rows, int cols) {
    const int lane = lane_index();
    for (int r = warp_index(); r < rows; r += warp_count()) {
        const float* in = x + static_cast<size_t>(r) * cols;
        float* out = y + static_cast<size_t>(r) * cols;
        float mx = -INFINITY;
        for (int c = lane; c < cols; c += kWarpSize) mx = fmaxf(mx, in[c]);
        mx = warp_max(mx);
        float sum = 0.0f;
        for (int c = lane; c < cols; c += kWarpSize) sum += expf(in[c] - mx);
        const float inv = 1.0f / warp_sum(sum);
        // Each lane reads in[c] before writing out[c]: in-place (x == y) is safe.
        for (int c = lane; c < cols; c += kWarpSize) out[c] = expf(in[c] - mx) * inv;
    }
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, int rows, int cols) {
    const int lane = lane_index();
    for (int r = warp_index(); r < rows; r += warp_count()) {
        const size_t offset = static_cast<size_t>(r) * cols;
        float dot = 0.0f;
        for (int c = lane; c < cols; c += kWarpSize) dot += y[offset + c] * dy[offset + c];
        dot = warp_sum(dot);
        for (int c = lane; c < cols; c += kWarpSize) dx[offset + c] = y[offset + c] * (dy[offset + c] - dot);
    }
}

// The per-row formulas are math.hpp's, as in CpuBackend (cpu_backend.cpp): a
// label outside [0, cols) gives a NaN loss and is read nowhere.
using math::label_in_range;

__global__ void softmax_cross_entropy_kernel(const float* logits, const int32_t* labels, int rows, int cols,
                                             float grad_scale, float* grad, float* stats, float smoothing) {
    const int lane = lane_index();
    double loss = 0.0;
    int correct = 0;
    for (int r = warp_index(); r < rows; r += warp_count()) {
        const float* in = logits + static_cast<size_t>(r) * cols;
        const ArgMax best = warp_argmax(in, cols, lane);
        const float mx = best.value;
        double sum = 0.0, shifted = 0.0;
        for (int c = lane; c < cols; c += kWarpSize) {
            sum += exp(static_cast<double>(in[c] - mx));
            shifted += static_cast<double>(in[c] - mx);
        }
        sum = warp_sum(sum);
        if (smoothing > 0.0f) shifted = warp_sum(shifted);
        const int label = labels[r];
        if (lane == 0) {
            const bool valid = label_in_range(label, cols);
            if (smoothing > 0.0f)
                loss += valid ? math::smoothed_xent_loss(sum, in[label], mx, shifted, smoothing, cols) : NAN;
            else
                loss += valid ? math::softmax_xent_loss(sum, in[label], mx) : NAN;
            correct += best.index == label ? 1 : 0;
        }
        if (grad) {
            float* g = grad + static_cast<size_t>(r) * cols;
            const float inv = static_cast<float>(1.0 / sum);
            for (int c = lane; c < cols; c += kWarpSize)
                g[c] = smoothing > 0.0f ? math::smoothed_xent_grad(in[c], mx, inv, c == label, smoothing, cols, grad_scale)
                                        : math::softmax_xent_grad(in[c], mx, inv, c == label, grad_scale);
        }
    }
    add_block_stats(loss, correct, stats);
}

__global__ void cross_entropy_probs_kernel(const float* probs, const int32_t* labels, int rows, int cols,
                                           float grad_scale, float* grad, float* stats, float smoothing) {
    const int lane = lane_index();
    double loss = 0.0;
    int correct = 0;
    for (int r = warp_index(); r < rows; r += warp_count()) {
        const float* p = probs + static_cast<size_t>(r) * cols;
        const ArgMax best = warp_argmax(p, cols, lane);
        const int label = labels[r];
        const bool valid = label_in_range(label, cols);
        const float pl = valid ? p[label] : NAN;
        double row = 0.0;
        if (smoothing > 0.0f) {
            for (int c = lane; c < cols; c += kWarpSize) row += math::smoothed_probs_xent_term(p[c], c == label, smoothing, cols);
            row = warp_sum(row);
        }
        if (lane == 0) {
            if (smoothing > 0.0f)
                loss += valid ? row : NAN;
            else
                loss += math::probs_xent_loss(pl);
            correct += best.index == label ? 1 : 0;
        }
        if (grad) {
            float* g = grad + static_cast<size_t>(r) * cols;
            for (int c = lane; c < cols; c += kWarpSize)
                g[c] = smoothing > 0.0f ? math::smoothed_probs_xent_grad(p[c], c == label, smoothing, cols, grad_scale)
                                        : math::probs_xent_grad(pl, c == label, grad_scale);
        }
    }
    add_block_stats(loss, correct, stats);
}

__global__ void mean_squared_error_kernel(const float* y, const int32_t* labels, int rows, int cols,
                                          float grad_scale, float* grad, float* stats) {
    const int lane = lane_index();
    double loss = 0.0;
    int correct = 0;
    for (int r = warp_index(); r < rows; r += warp_count()) {
        const float* yr = y + static_cast<size_t>(r) * cols;
        const ArgMax best = warp_argmax(yr, cols, lane);
        const int label = labels[r];
        double row_sum = 0.0;
        for (int c = lane; c < cols; c += kWarpSize) {
            const float diff = math::mse_diff(yr[c], c == label);
            row_sum += static_cast<double>(diff) * diff;
            if (grad) grad[static_cast<size_t>(r) * cols + c] = math::mse_grad(diff, cols, grad_scale);
        }
        row_sum = warp_sum(row_sum);
        if (lane == 0) {
            loss += label_in_range(label, cols) ? row_sum / cols : NAN;
            correct += best.index == label ? 1 : 0;
        }
    }
    add_block_stats(loss, correct, stats);
}

__global__ void regression_loss_kernel(const float* y, const float* targets, int rows, int cols,
                                       math::RegressionLoss kind, float delta, math::RegressionMetric metric,
                                       float grad_scale, float* grad, float* stats) {
    const int lane = lane_index();
    double loss = 0.0, metric_sum = 0.0;
    for (int r = warp_index(); r < rows; r += warp_count()) {
        const size_t at = static_cast<size_t>(r) * cols;
        double row_loss = 0.0, row_metric = 0.0;
        for (int c = lane; c < cols; c += kWarpSize) {
            const float diff = y[at + c] - targets[at + c];
            row_loss += math::regression_term(kind, diff, delta);
            row_metric += math::regression_metric_term(metric, diff);
            if (grad) grad[at + c] = math::regression_grad(kind, diff, delta, cols, grad_scale);
        }
        row_loss = warp_sum(row_loss);
        row_metric = warp_sum(row_metric);
        if (lane == 0) {
            loss += row_loss / cols;
            metric_sum += row_metric / cols;
        }
    }
    add_block_stats(loss, metric_sum, stats);
}

unsigned row_blocks(int rows) { return blocks_for(static_cast<size_t>(rows), kWarpsPerBlock); }

}  // namespace

cudaError_t softmax_forward(cudaStream_t stream, const float* x, float* y, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    softmax_forward_kernel<<<row_blocks(rows), kBlockThreads, 0, stream>>>(x, y, rows, cols);
    return cudaGetLastError();
}

cudaError_t softmax_backward(cudaStream_t stream, const float* y, const float* dy, float* dx, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    softmax_backward_kernel<<<row_blocks(rows), kBlockThreads, 0, stream>>>(y, dy, dx, rows, cols);
    return cudaGetLastError();
}

cudaError_t softmax_cross_entropy(cudaStream_t stream, const float* logits, const int32_t* labels, int rows,
                                  int cols, float grad_scale, float* grad, float* stats, float smoothing) {
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    softmax_cross_entropy_kernel<<<row_blocks(rows), kBlockThreads, 0, stream>>>(logits, labels, rows, cols,
                                                                                 grad_scale, grad, stats, smoothing);
    return cudaGetLastError();
}

cudaError_t cross_entropy_probs(cudaStream_t stream, const float* probs, const int32_t* labels, int rows, int cols,
                                float grad_scale, float* grad, float* stats, float smoothing) {
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    cross_entropy_probs_kernel<<<row_blocks(rows), kBlockThreads, 0, stream>>>(probs, labels, rows, cols,
                                                                               grad_scale, grad, stats, smoothing);
    return cudaGetLastError();
}

cudaError_t mean_squared_error(cudaStream_t stream, const float* y, const int32_t* labels, int rows, int cols,
                               float grad_scale, float* grad, float* stats) {
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    mean_squared_error_kernel<<<row_blocks(rows), kBlockThreads, 0, stream>>>(y, labels, rows, cols, grad_scale,
                                                                              grad, stats);
    return cudaGetLastError();
}

cudaError_t regression_loss(cudaStream_t stream, const float* y, const float* targets, int rows, int cols,
                            math::RegressionLoss kind, float delta, math::RegressionMetric metric, float grad_scale,
                            float* grad, float* stats) {
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    regression_loss_kernel<<<row_blocks(rows), kBlockThreads, 0, stream>>>(y, targets, rows, cols, kind, delta, metric,
                                                                           grad_scale, grad, stats);
    return cudaGetLastError();
}

}  // namespace gputrain::cuda_kernels
