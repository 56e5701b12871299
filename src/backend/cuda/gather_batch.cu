// gather_batch: a batch gathered from a data set resident on the device,
// inputs and labels in one launch. The batch's first position in the epoch's
// order is read from device memory, so that a recorded step graph gathers the
// rows of whichever step it replays.
#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/kernels.hpp"

namespace gputrain::cuda_kernels {

namespace {

// Items [0, rows * row_words) are input words, the `rows` after them labels.
__global__ void gather_batch_kernel(float* inputs_dst, int32_t* labels_dst, const float* inputs_src,
                                    const int32_t* labels_src, size_t row_words, const int32_t* order,
                                    const int64_t* position, size_t rows) {
    const int32_t* rows_of_batch = order + *position;
    const size_t input_words = rows * row_words, n = input_words + rows;
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        if (i < input_words) {
            const size_t r = i / row_words, w = i % row_words;
            inputs_dst[i] = inputs_src[static_cast<size_t>(rows_of_batch[r]) * row_words + w];
        } else {
            const size_t r = i - input_words;
            labels_dst[r] = labels_src[rows_of_batch[r]];
        }
    }
}

}  // namespace

cudaError_t gather_batch(cudaStream_t stream, float* inputs_dst, int32_t* labels_dst, const float* inputs_src,
                         const int32_t* labels_src, size_t row_words, const int32_t* order, const int64_t* position,
                         int rows) {
    const size_t n = elements(rows, row_words + 1);
    if (n == 0) return cudaSuccess;
    gather_batch_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(inputs_dst, labels_dst, inputs_src, labels_src,
                                                                     row_words, order, position,
                                                                     static_cast<size_t>(rows));
    return cudaGetLastError();
}

}  // namespace gputrain::cuda_kernels
