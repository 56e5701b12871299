// The CUDA backend's kernels of backend/ops/embedding.hpp.
#include <cmath>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/ops/embedding.hpp"

namespace gputrain::cuda_kernels {

namespace {

// Up to this vocabulary the table's gradient is summed row by row in a fixed
// order (each block scans every id for its row): the same bits on every run.
// Larger vocabularies scatter with atomics (order not fixed).
constexpr int kOrderedGradVocab = 4096;

__device__ __forceinline__ long id_of(float v, int vocab) {
    if (!(v >= 0.0f) || v >= static_cast<float>(vocab) || v != floorf(v)) return -1;
    return static_cast<long>(v);
}

__global__ void lookup_kernel(const float* ids, const float* table, float* y, size_t count, int vocab, int dim) {
    const size_t total = count * static_cast<size_t>(dim);
    for (size_t i = thread_index(); i < total; i += thread_count()) {
        const size_t n = i / static_cast<size_t>(dim), c = i % static_cast<size_t>(dim);
        const long id = id_of(ids[n], vocab);
        y[i] = id < 0 ? NAN : table[static_cast<size_t>(id) * static_cast<size_t>(dim) + c];
    }
}

// Block v sums the rows of dy whose id is v, each thread a column, n in order
// (then adds the sum to what d_table holds, with `accumulate`).
__global__ void ordered_grad_kernel(const float* ids, const float* dy, float* d_table, size_t count, int vocab,
                                    int dim, bool accumulate) {
    for (int v = blockIdx.x; v < vocab; v += gridDim.x)
        for (int c = threadIdx.x; c < dim; c += blockDim.x) {
            float sum = 0.0f;
            for (size_t n = 0; n < count; ++n)
                if (id_of(ids[n], vocab) == v) sum += dy[n * static_cast<size_t>(dim) + c];
            float& out = d_table[static_cast<size_t>(v) * static_cast<size_t>(dim) + c];
            out = accumulate ? out + sum : sum;
        }
}

__global__ void scatter_grad_kernel(const float* ids, const float* dy, float* d_table, size_t count, int vocab,
                                    int dim) {
    const size_t total = count * static_cast<size_t>(dim);
    for (size_t i = thread_index(); i < total; i += thread_count()) {
        const size_t n = i / static_cast<size_t>(dim), c = i % static_cast<size_t>(dim);
        const long id = id_of(ids[n], vocab);
        if (id >= 0) atomicAdd(d_table + static_cast<size_t>(id) * static_cast<size_t>(dim) + c, dy[i]);
    }
}

cudaStream_t stream_of(Backend& backend) {
    return static_cast<cudaStream_t>(static_cast<CudaBackend&>(backend).stream_handle());
}
int device_of(Backend& backend) { return static_cast<CudaBackend&>(backend).device(); }

void embedding_lookup(Backend& b, const ops::EmbeddingLookup& op) {
    const size_t n = elements(op.count, op.dim);
    CUDA_CHECK(device_of(b), launch_1d(stream_of(b), n, lookup_kernel, op.ids, op.table, op.y, op.count, op.vocab,
                                       op.dim));
}

void embedding_grad(Backend& b, const ops::EmbeddingGrad& op) {
    cudaStream_t stream = stream_of(b);
    if (op.vocab <= kOrderedGradVocab) {
        if (op.vocab <= 0 || op.dim <= 0) return;
        ordered_grad_kernel<<<static_cast<unsigned>(op.vocab), kBlockThreads, 0, stream>>>(op.ids, op.dy, op.d_table,
                                                                                          op.count, op.vocab, op.dim,
                                                                                          op.accumulate);
        CUDA_CHECK(device_of(b), cudaGetLastError());
        return;
    }
    if (!op.accumulate)
        CUDA_CHECK(device_of(b), cudaMemsetAsync(op.d_table, 0, elements(op.vocab, op.dim) * sizeof(float), stream));
    const size_t n = elements(op.count, op.dim);
    CUDA_CHECK(device_of(b), launch_1d(stream, n, scatter_grad_kernel, op.ids, op.dy, op.d_table, op.count,
                                       op.vocab, op.dim));
}

}  // namespace

void add_embedding(KernelTable& table) {
    table.add<ops::EmbeddingLookup, &embedding_lookup>();
    table.add<ops::EmbeddingGrad, &embedding_grad>();
}

}  // namespace gputrain::cuda_kernels
