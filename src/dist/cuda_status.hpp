// Checks for CUDA runtime and NCCL calls in dist/: a failure throws Error
// naming the call, the rank and the device.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "core/error.hpp"

namespace gputrain::dist {

inline void check_cuda(cudaError_t status, const char* call, int rank, int device) {
    if (status != cudaSuccess)
        throw Error("replica " + std::to_string(rank) + " (cuda:" + std::to_string(device) + "): " + call +
                    " failed: " + cudaGetErrorString(status));
}

inline void check_nccl(ncclResult_t status, const char* call, int rank, int device) {
    if (status != ncclSuccess)
        throw Error("replica " + std::to_string(rank) + " (cuda:" + std::to_string(device) + "): " + call +
                    " failed: " + ncclGetErrorString(status));
}

}  // namespace gputrain::dist

#define DIST_CUDA_CHECK(call) ::gputrain::dist::check_cuda((call), #call, rank_, device_)
#define DIST_NCCL_CHECK(call) ::gputrain::dist::check_nccl((call), #call, rank_, device_)
