// Batch-normalization kernels of the CUDA backend, on the math.hpp formulas.
// Our own kernels rather than cuDNN's fused batch norm: synchronized BN needs
// the per-replica sums as a separate step (all-reduced between calls), which
// cuDNN's API does not expose.
//
// The column sums over [rows, C]: a grid of (32-column tiles) x (row chunks);
// in a block, 16 thread rows each add every 16th row of the chunk, then a
// shared-memory tree adds the 16 partial sums. Each chunk's sums go to scratch
// and a second kernel adds the chunks in order. Every order is fixed, so the
// sums are the same on every run.
#include "backend/cuda/batch_norm_kernels.hpp"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/math.hpp"

namespace gputrain::cuda_kernels {

namespace {

constexpr int kTileCols = 32;
constexpr int kRowGroups = 16;
// A chunk of rows is worth a block only when each of its 16 thread rows gets
// a few rows to add; fewer chunks than this many rows each would mostly wait.
constexpr int kMinRowsPerChunk = 64;
// Blocks enough to fill an H200's 132 SMs a few times over.
constexpr int kTargetBlocks = 512;

// The two pairs of quantities summed per column.
struct ValueAndSquare {  // x, x^2
    const float* x;
    __device__ void operator()(size_t i, int, float& a, float& b) const {
        const float v = x[i];
        a = v;
        b = v * v;
    }
};
struct GradAndGradXhat {  // dy, dy * xhat
    const float* x;
    const float* dy;
    const float* mean_invstd;
    int channels;
    __device__ void operator()(size_t i, int c, float& a, float& b) const {
        const float g = dy[i];
        a = g;
        b = g * ((x[i] - mean_invstd[c]) * mean_invstd[channels + c]);
    }
};

// out[chunk * 2C + c] and out[chunk * 2C + C + c] for chunk = blockIdx.y;
// blockIdx.x strides over the column tiles.
template <class Terms>
__global__ void column_sums_kernel(Terms terms, int rows, int channels, int rows_per_chunk, float* out) {
    __shared__ float part_a[kRowGroups][kTileCols + 1];
    __shared__ float part_b[kRowGroups][kTileCols + 1];
    const int row_begin = blockIdx.y * rows_per_chunk;
    const int row_end = min(row_begin + rows_per_chunk, rows);
    float* chunk_out = out + static_cast<size_t>(blockIdx.y) * 2 * channels;
    const int tiles = (channels + kTileCols - 1) / kTileCols;
    // The loop bound is the same for every thread of the block, so all of
    // them reach the barriers.
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int c = tile * kTileCols + static_cast<int>(threadIdx.x);
        float a = 0.0f, b = 0.0f;
        if (c < channels)
            for (int r = row_begin + static_cast<int>(threadIdx.y); r < row_end; r += kRowGroups) {
                float ta, tb;
                terms(static_cast<size_t>(r) * channels + c, c, ta, tb);
                a += ta;
                b += tb;
            }
        part_a[threadIdx.y][threadIdx.x] = a;
        part_b[threadIdx.y][threadIdx.x] = b;
        __syncthreads();
        for (int half = kRowGroups / 2; half > 0; half /= 2) {
            if (static_cast<int>(threadIdx.y) < half) {
                part_a[threadIdx.y][threadIdx.x] += part_a[threadIdx.y + half][threadIdx.x];
                part_b[threadIdx.y][threadIdx.x] += part_b[threadIdx.y + half][threadIdx.x];
            }
            __syncthreads();
        }
        if (threadIdx.y == 0 && c < channels) {
            chunk_out[c] = part_a[0][threadIdx.x];
            chunk_out[channels + c] = part_b[0][threadIdx.x];
        }
        __syncthreads();
    }
}

// sums[j] = sum over chunks of partial[chunk * n + j], n = 2C.
__global__ void add_chunks_kernel(const float* partial, int chunks, size_t n, float* sums) {
    for (size_t j = thread_index(); j < n; j += thread_count()) {
        float total = 0.0f;
        for (int k = 0; k < chunks; ++k) total += partial[static_cast<size_t>(k) * n + j];
        sums[j] = total;
    }
}

template <class Terms>
cudaError_t column_sums(cudaStream_t stream, Terms terms, int rows, int channels, float* sums, float* scratch,
                        size_t scratch_floats) {
    if (channels <= 0) return cudaSuccess;
    rows = std::max(rows, 0);  // 0 rows still writes sums = 0
    const size_t n = 2 * static_cast<size_t>(channels);
    const int tiles = (channels + kTileCols - 1) / kTileCols;
    int chunks = std::max(1, rows / kMinRowsPerChunk);
    chunks = std::min(chunks, std::max(1, kTargetBlocks / tiles));
    chunks = static_cast<int>(std::min<size_t>(static_cast<size_t>(chunks), scratch_floats / n));
    if (chunks <= 1) {  // one chunk: straight into sums
        const dim3 grid(blocks_for(static_cast<size_t>(channels), kTileCols), 1);
        column_sums_kernel<<<grid, dim3(kTileCols, kRowGroups), 0, stream>>>(terms, rows, channels, std::max(rows, 1),
                                                                             sums);
        return cudaGetLastError();
    }
    const int rows_per_chunk = (rows + chunks - 1) / chunks;
    chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;  // no empty chunk at the end
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks));
    column_sums_kernel<<<grid, dim3(kTileCols, kRowGroups), 0, stream>>>(terms, rows, channels, rows_per_chunk,
                                                                         scratch);
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) return status;
    add_chunks_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(scratch, chunks, n, sums);
    return cudaGetLastError();
}

__global__ void finalize_kernel(const float* sums, float count, int channels, float eps, float momentum,
                                float* mean_invstd, float* moving_mean, float* moving_var) {
    for (size_t i = thread_index(); i < static_cast<size_t>(channels); i += thread_count()) {
        const math::BatchNormStatistics s = math::batch_norm_statistics(sums[i], sums[channels + i], count, eps);
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

size_t elements(int rows, int channels) {
    return rows <= 0 || channels <= 0 ? 0 : static_cast<size_t>(rows) * channels;
}

}  // namespace

cudaError_t batch_norm_sums(cudaStream_t stream, const float* x, int rows, int channels, float* sums, float* scratch,
                            size_t scratch_floats) {
    return column_sums(stream, ValueAndSquare{x}, rows, channels, sums, scratch, scratch_floats);
}

cudaError_t batch_norm_backward_sums(cudaStream_t stream, const float* x, const float* dy, const float* mean_invstd,
                                     int rows, int channels, float* sums, float* scratch, size_t scratch_floats) {
    return column_sums(stream, GradAndGradXhat{x, dy, mean_invstd, channels}, rows, channels, sums, scratch,
                       scratch_floats);
}

cudaError_t batch_norm_finalize(cudaStream_t stream, const float* sums, float count, int channels, float eps,
                                float momentum, float* mean_invstd, float* moving_mean, float* moving_var) {
    if (channels <= 0) return cudaSuccess;
    finalize_kernel<<<blocks_for(static_cast<size_t>(channels)), kBlockThreads, 0, stream>>>(
        sums, count, channels, eps, momentum, mean_invstd, moving_mean, moving_var);
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
