// The CUDA backend's kernels of backend/ops/normalization.hpp.
//
// Forward and dx: one warp per row (rows w, w + warp_count(), ... for warp w),
// each lane striding over the columns; the row statistics are two-pass sums
// in double, reduced across the warp by shuffles, as the CPU sums them. The
// per-element arithmetic uses __fmul_rn/__fadd_rn/__fsub_rn so that nvcc does
// not contract it into FMAs: the same roundings as the CPU's float
// expressions. dgamma and dbeta are column sums (column_sums.cuh): a fixed
// order, no atomics, the same bits on every run.
#include "backend/cuda/column_sums.cuh"
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/ops/normalization.hpp"

namespace gputrain::cuda_kernels {

namespace {

// The sum of v over the 32 lanes of a warp, in every lane (a fixed tree: the
// same bits every run).
__device__ __forceinline__ double warp_sum(double v) {
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// The row loop's bound is the same for the 32 lanes of a warp, so every lane
// reaches every shuffle.
__global__ void layer_norm_forward_kernel(ops::LayerNormForward op) {
    const size_t cols = static_cast<size_t>(op.cols);
    const int lane = lane_index();
    for (int r = warp_index(); r < op.rows; r += warp_count()) {
        const float* x = op.x + static_cast<size_t>(r) * cols;
        float* y = op.y + static_cast<size_t>(r) * cols;
        double mean = 0.0;
        if (!op.rms) {
            double sum = 0.0;
            for (size_t c = lane; c < cols; c += kWarpSize) sum += static_cast<double>(x[c]);
            mean = warp_sum(sum) / static_cast<double>(cols);
        }
        double squares = 0.0;
        for (size_t c = lane; c < cols; c += kWarpSize) {
            const double d = static_cast<double>(x[c]) - mean;
            squares += d * d;
        }
        squares = warp_sum(squares);
        const float rstd =
            static_cast<float>(1.0 / sqrt(squares / static_cast<double>(cols) + static_cast<double>(op.epsilon)));
        const float m = static_cast<float>(mean);
        if (lane == 0) {
            if (!op.rms) op.mean[r] = m;
            op.rstd[r] = rstd;
        }
        for (size_t c = lane; c < cols; c += kWarpSize) {
            const float xhat = __fmul_rn(__fsub_rn(x[c], m), rstd);
            const float scaled = op.gamma ? __fmul_rn(xhat, op.gamma[c]) : xhat;
            y[c] = op.beta ? __fadd_rn(scaled, op.beta[c]) : scaled;
        }
    }
}

__global__ void layer_norm_backward_data_kernel(ops::LayerNormBackward op) {
    const size_t cols = static_cast<size_t>(op.cols);
    const int lane = lane_index();
    for (int r = warp_index(); r < op.rows; r += warp_count()) {
        const size_t offset = static_cast<size_t>(r) * cols;
        const float* x = op.x + offset;
        const float* dy = op.dy + offset;
        float* dx = op.dx + offset;
        const float m = op.rms ? 0.0f : op.mean[r];
        const float rstd = op.rstd[r];
        double sum_g = 0.0, sum_gx = 0.0;
        for (size_t c = lane; c < cols; c += kWarpSize) {
            const float xhat = __fmul_rn(__fsub_rn(x[c], m), rstd);
            const float g = op.gamma ? __fmul_rn(dy[c], op.gamma[c]) : dy[c];
            sum_g += static_cast<double>(g);
            sum_gx += static_cast<double>(__fmul_rn(g, xhat));
        }
        sum_g = warp_sum(sum_g);
        sum_gx = warp_sum(sum_gx);
        const float mean_g = op.rms ? 0.0f : static_cast<float>(sum_g / static_cast<double>(cols));
        const float mean_gx = static_cast<float>(sum_gx / static_cast<double>(cols));
        for (size_t c = lane; c < cols; c += kWarpSize) {
            const float xhat = __fmul_rn(__fsub_rn(x[c], m), rstd);
            const float g = op.gamma ? __fmul_rn(dy[c], op.gamma[c]) : dy[c];
            dx[c] = __fmul_rn(rstd, __fsub_rn(__fsub_rn(g, mean_g), __fmul_rn(xhat, mean_gx)));
        }
    }
}

// Column-sum terms (column_sums.cuh) of dgamma (dy * xhat) and dbeta (dy).
struct GammaGradTerm {
    static constexpr int kCount = 1;
    using Sum = double;
    const float* x;
    const float* dy;
    const float* mean;  // null with rms
    const float* rstd;
    int cols;
    __device__ void operator()(size_t i, int, float* v) const {
        const size_t r = i / static_cast<size_t>(cols);
        const float m = mean ? mean[r] : 0.0f;
        v[0] = __fmul_rn(dy[i], __fmul_rn(__fsub_rn(x[i], m), rstd[r]));
    }
};
struct BetaGradTerm {
    static constexpr int kCount = 1;
    using Sum = double;
    const float* dy;
    __device__ void operator()(size_t i, int, float* v) const { v[0] = dy[i]; }
};

cudaStream_t stream_of(Backend& backend) {
    return static_cast<cudaStream_t>(static_cast<CudaBackend&>(backend).stream_handle());
}
int device_of(Backend& backend) { return static_cast<CudaBackend&>(backend).device(); }

// One warp per row, at most kMaxBlocks blocks (the kernels loop over the rest).
unsigned row_blocks(int rows) { return blocks_for(static_cast<size_t>(rows), kWarpsPerBlock); }

cudaError_t launch_forward(cudaStream_t stream, const ops::LayerNormForward& op) {
    if (op.rows <= 0 || op.cols <= 0) return cudaSuccess;
    layer_norm_forward_kernel<<<row_blocks(op.rows), kBlockThreads, 0, stream>>>(op);
    return cudaGetLastError();
}

cudaError_t launch_backward(cudaStream_t stream, const ops::LayerNormBackward& op) {
    if (op.cols <= 0) return cudaSuccess;
    const int rows = op.rows > 0 ? op.rows : 0;
    // The two sums share the scratch: stream order keeps them apart.
    if (op.dgamma) {
        const GammaGradTerm term{op.x, op.dy, op.rms ? nullptr : op.mean, op.rstd, op.cols};
        const cudaError_t status = column_sums(stream, term, rows, op.cols, op.dgamma, op.scratch, op.scratch_floats);
        if (status != cudaSuccess) return status;
    }
    if (op.dbeta) {
        const cudaError_t status =
            column_sums(stream, BetaGradTerm{op.dy}, rows, op.cols, op.dbeta, op.scratch, op.scratch_floats);
        if (status != cudaSuccess) return status;
    }
    if (op.dx && rows > 0) {
        layer_norm_backward_data_kernel<<<row_blocks(rows), kBlockThreads, 0, stream>>>(op);
        return cudaGetLastError();
    }
    return cudaSuccess;
}

void layer_norm_forward(Backend& b, const ops::LayerNormForward& op) {
    CUDA_CHECK(device_of(b), launch_forward(stream_of(b), op));
}

void layer_norm_backward(Backend& b, const ops::LayerNormBackward& op) {
    CUDA_CHECK(device_of(b), launch_backward(stream_of(b), op));
}

}  // namespace

void add_normalization(KernelTable& table) {
    table.add<ops::LayerNormForward, &layer_norm_forward>();
    table.add<ops::LayerNormBackward, &layer_norm_backward>();
}

}  // namespace gputrain::cuda_kernels
