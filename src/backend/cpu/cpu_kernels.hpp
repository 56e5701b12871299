// The CPU backend's kernels of ops outside the Backend interface
// (backend/kernels.hpp): one add_* function per kernel file, each adding that
// file's kernels; cpu_kernels.cpp calls them all.
#pragma once

#include "backend/kernels.hpp"

namespace gputrain::cpu_kernels {

const KernelTable& table();

void add_attention(KernelTable& table);    // attention_kernels.cpp
void add_elementwise(KernelTable& table);  // elementwise_kernels.cpp
void add_embedding(KernelTable& table);    // embedding_kernels.cpp
void add_optimizers(KernelTable& table);   // optimizer_kernels.cpp
void add_prepare(KernelTable& table);      // prepare_kernels.cpp
void add_normalization(KernelTable& table);  // normalization_kernels.cpp

}  // namespace gputrain::cpu_kernels
