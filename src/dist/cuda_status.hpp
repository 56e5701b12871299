// Checks for CUDA runtime and NCCL calls in dist/: a failure throws Error
// naming the call, the rank and the device.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>
#include <vector>

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

// An event from a free list of reusable ones, or a new one (timing off) when
// the list is empty. The caller checks the creation with `check`.
template <typename Check>
cudaEvent_t take_event_from(std::vector<cudaEvent_t>& free_list, Check check) {
    if (free_list.empty()) {
        cudaEvent_t e = nullptr;
        check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        return e;
    }
    cudaEvent_t e = free_list.back();
    free_list.pop_back();
    return e;
}

}  // namespace gputrain::dist

#define DIST_CUDA_CHECK(call) ::gputrain::dist::check_cuda((call), #call, rank_, device_)
#define DIST_NCCL_CHECK(call) ::gputrain::dist::check_nccl((call), #call, rank_, device_)
