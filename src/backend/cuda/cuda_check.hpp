// Checks for CUDA runtime, cuBLAS and cuDNN calls: a failure throws gputrain::Error
// naming the GPU, the call and the library's own text, e.g.
//   cuda:0: cudaMemcpyAsync(...) failed: an illegal memory access was encountered
// Only host code of backend/cuda (and its tests) includes this header.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gputrain::cuda_detail {

// "cudaMemcpyAsync(dst, src, n, kind, s)" -> "cudaMemcpyAsync(...)": the name
// says which call failed; the arguments are noise in a user-facing message.
inline std::string call_name(std::string_view call_text) {
    const size_t paren = call_text.find('(');
    if (paren == std::string_view::npos) return std::string(call_text);
    return std::string(call_text.substr(0, paren)) + "(...)";
}

[[noreturn]] inline void throw_cuda_error(int device, std::string_view call_text, cudaError_t status) {
    // Clear the runtime's last-error slot so a later launch check does not
    // report this (non-sticky) error a second time.
    (void)cudaGetLastError();
    std::string message = "cuda:" + std::to_string(device) + ": " + call_name(call_text) +
                          " failed: " + cudaGetErrorString(status);
    // Kernel faults are reported by whichever call comes next, not by the launch.
    if (status == cudaErrorIllegalAddress || status == cudaErrorLaunchFailure ||
        status == cudaErrorMisalignedAddress)
        message += " (reported asynchronously; rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel)";
    throw Error(message);
}

[[noreturn]] inline void throw_cublas_error(int device, std::string_view call_text, cublasStatus_t status) {
    throw Error("cuda:" + std::to_string(device) + ": " + call_name(call_text) +
                " failed: " + cublasGetStatusString(status));
}

[[noreturn]] inline void throw_cudnn_error(int device, std::string_view call_text, cudnnStatus_t status) {
    throw Error("cuda:" + std::to_string(device) + ": " + call_name(call_text) +
                " failed: " + cudnnGetErrorString(status));
}

}  // namespace gputrain::cuda_detail

// CUDA_CHECK(device, call): `device` is the GPU ordinal the message names.
#define CUDA_CHECK(device, call)                                                                  \
    do {                                                                                          \
        const cudaError_t gputrain_cuda_status_ = (call);                                         \
        if (gputrain_cuda_status_ != cudaSuccess)                                                 \
            ::gputrain::cuda_detail::throw_cuda_error((device), #call, gputrain_cuda_status_);    \
    } while (0)

#define CUBLAS_CHECK(device, call)                                                                \
    do {                                                                                          \
        const cublasStatus_t gputrain_cublas_status_ = (call);                                    \
        if (gputrain_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                     \
            ::gputrain::cuda_detail::throw_cublas_error((device), #call, gputrain_cublas_status_); \
    } while (0)

#define CUDNN_CHECK(device, call)                                                                 \
    do {                                                                                          \
        const cudnnStatus_t gputrain_cudnn_status_ = (call);                                      \
        if (gputrain_cudnn_status_ != CUDNN_STATUS_SUCCESS)                                       \
            ::gputrain::cuda_detail::throw_cudnn_error((device), #call, gputrain_cudnn_status_);  \
    } while (0)
