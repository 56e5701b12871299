// The CUDA backend's kernels of ops outside the Backend interface
// (backend/kernels.hpp): one add_* function per kernel file, each adding that
// file's kernels; cuda_kernels.cpp calls them all. A kernel runs on the
// thread that queued it, with the backend's GPU current, and launches on
// CudaBackend::stream_handle().
#pragma once

#include "backend/kernels.hpp"

namespace gputrain::cuda_kernels {

const KernelTable& table();

void add_attention(KernelTable& table);    // attention_kernels.cu
void add_elementwise(KernelTable& table);  // elementwise_kernels.cu
void add_embedding(KernelTable& table);    // embedding_kernels.cu
void add_optimizers(KernelTable& table);   // optimizer_kernels.cu
void add_prepare(KernelTable& table);      // prepare_kernels.cu
void add_normalization(KernelTable& table);  // normalization_kernels.cu

}  // namespace gputrain::cuda_kernels
