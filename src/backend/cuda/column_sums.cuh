// Column sums over a row-major [rows, cols] matrix, shared by sum_rows, the
// fused activation + bias gradient and the batch-norm reductions.
//
// A grid of (32-column tiles) x (row chunks); in a block, 16 thread rows each
// add every 16th row of the chunk, then a shared-memory tree adds the 16
// partial sums. With one chunk the sums go straight to the output; otherwise
// each chunk's sums go to scratch and a second kernel adds the chunks in
// order. The chunking depends only on the shape, and every order is fixed, so
// the sums are the same on every run (no atomics). Many rows and few columns
// (a conv layer's bias: 25088 x 32) still fill the GPU.
//
// Terms supplies kCount quantities per element: terms(i, c, v) writes
// v[0..kCount) for element i = r * cols + c (it may also write elements of
// its own, once each: every element is visited exactly once). Terms::Sum is
// the type the sums are kept in until the end (float for bias gradients;
// double for batch norm's statistics, whose E[x^2] - E[x]^2 cancels, as the
// CPU does). The output holds kCount rows of `cols` float sums: out[k * cols + c].
#pragma once

#include <algorithm>

#include "backend/cuda/kernel_launch.cuh"

namespace gputrain::cuda_kernels {

namespace {

constexpr int kSumTileCols = 32;
constexpr int kSumRowGroups = 16;
// A chunk of rows is worth a block only when each of its 16 thread rows gets
// a few rows to add; fewer chunks than this many rows each would mostly wait.
constexpr int kMinRowsPerChunk = 64;
// Blocks enough to fill an H200's 132 SMs a few times over.
constexpr int kTargetSumBlocks = 512;

// out[chunk * kCount * cols + k * cols + c] for chunk = blockIdx.y;
// blockIdx.x strides over the column tiles. Out: float for the final sums,
// Terms::Sum for chunk sums in scratch.
template <class Terms, class Out>
__global__ void column_sums_kernel(Terms terms, int rows, int cols, int rows_per_chunk, Out* out) {
    constexpr int kCount = Terms::kCount;
    using Sum = typename Terms::Sum;
    __shared__ Sum part[kCount][kSumRowGroups][kSumTileCols + 1];
    const int row_begin = static_cast<int>(blockIdx.y) * rows_per_chunk;
    const int row_end = min(row_begin + rows_per_chunk, rows);
    Out* chunk_out = out + static_cast<size_t>(blockIdx.y) * kCount * cols;
    const int tiles = (cols + kSumTileCols - 1) / kSumTileCols;
    // The loop bound is the same for every thread of the block, so all of
    // them reach the barriers.
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int c = tile * kSumTileCols + static_cast<int>(threadIdx.x);
        Sum acc[kCount] = {};
        if (c < cols)
            for (int r = row_begin + static_cast<int>(threadIdx.y); r < row_end; r += kSumRowGroups) {
                float v[kCount];
                terms(static_cast<size_t>(r) * cols + c, c, v);
                for (int k = 0; k < kCount; ++k) acc[k] += v[k];
            }
        for (int k = 0; k < kCount; ++k) part[k][threadIdx.y][threadIdx.x] = acc[k];
        __syncthreads();
        for (int half = kSumRowGroups / 2; half > 0; half /= 2) {
            if (static_cast<int>(threadIdx.y) < half)
                for (int k = 0; k < kCount; ++k)
                    part[k][threadIdx.y][threadIdx.x] += part[k][threadIdx.y + half][threadIdx.x];
            __syncthreads();
        }
        if (threadIdx.y == 0 && c < cols)
            for (int k = 0; k < kCount; ++k)
                chunk_out[static_cast<size_t>(k) * cols + c] = static_cast<Out>(part[k][0][threadIdx.x]);
        __syncthreads();
    }
}

// sums[j] = sum over chunks of partial[chunk * n + j].
template <class Sum>
__global__ void add_chunks_kernel(const Sum* partial, int chunks, size_t n, float* sums) {
    for (size_t j = thread_index(); j < n; j += thread_count()) {
        Sum total = 0;
        for (int k = 0; k < chunks; ++k) total += partial[static_cast<size_t>(k) * n + j];
        sums[j] = static_cast<float>(total);
    }
}

// Row chunks for a [rows, cols] sum of kCount quantities: enough blocks to
// fill the GPU, each chunk at least kMinRowsPerChunk rows, and no more chunks
// than `scratch_sums` (sums of Terms::Sum) hold; 1 means no scratch.
inline int column_sum_chunks(int rows, int cols, int count, size_t scratch_sums) {
    const int tiles = (cols + kSumTileCols - 1) / kSumTileCols;
    int chunks = std::max(1, rows / kMinRowsPerChunk);
    chunks = std::min(chunks, std::max(1, kTargetSumBlocks / tiles));
    chunks = static_cast<int>(std::min<size_t>(static_cast<size_t>(chunks), scratch_sums / (size_t(count) * cols)));
    return std::max(chunks, 1);
}

// sums (Terms::kCount * cols floats) = the column sums; 0 rows write zeros.
// `scratch` (scratch_floats floats) holds the chunk sums, as Terms::Sum.
template <class Terms>
cudaError_t column_sums(cudaStream_t stream, Terms terms, int rows, int cols, float* sums, float* scratch,
                        size_t scratch_floats) {
    using Sum = typename Terms::Sum;
    if (cols <= 0) return cudaSuccess;
    rows = std::max(rows, 0);
    const size_t n = static_cast<size_t>(Terms::kCount) * cols;
    const int tiles = (cols + kSumTileCols - 1) / kSumTileCols;
    const dim3 block(kSumTileCols, kSumRowGroups);
    Sum* chunk_sums = reinterpret_cast<Sum*>(scratch);  // cudaMalloc'd: aligned for double
    int chunks = column_sum_chunks(rows, cols, Terms::kCount, scratch_floats * sizeof(float) / sizeof(Sum));
    if (chunks <= 1) {  // one chunk: straight into sums
        const dim3 grid(blocks_for(static_cast<size_t>(cols), kSumTileCols), 1);
        column_sums_kernel<<<grid, block, 0, stream>>>(terms, rows, cols, std::max(rows, 1), sums);
        return cudaGetLastError();
    }
    const int rows_per_chunk = (rows + chunks - 1) / chunks;
    chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;  // no empty chunk at the end
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks));
    column_sums_kernel<<<grid, block, 0, stream>>>(terms, rows, cols, rows_per_chunk, chunk_sums);
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) return status;
    add_chunks_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(chunk_sums, chunks, n, sums);
    return cudaGetLastError();
}

}  // namespace

}  // namespace gputrain::cuda_kernels
