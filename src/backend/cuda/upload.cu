// upload: a few bytes of host data written to device memory by a one-thread
// kernel that receives them as its argument. Unlike a copy from host memory,
// the source may be reused as soon as the launch returns, nothing waits, and
// the launch can be recorded in a graph.
#include <cstring>

#include "backend/cuda/kernels.hpp"

namespace gputrain::cuda_kernels {

namespace {

struct UploadBytes {
    uint32_t words[kUploadBytes / sizeof(uint32_t)];
};

__global__ void upload_kernel(uint32_t* dst, UploadBytes data, unsigned words) {
    for (unsigned i = threadIdx.x; i < words; i += blockDim.x) dst[i] = data.words[i];
}

__global__ void upload_bytes_kernel(unsigned char* dst, UploadBytes data, unsigned bytes) {
    const auto* src = reinterpret_cast<const unsigned char*>(data.words);
    for (unsigned i = threadIdx.x; i < bytes; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

cudaError_t upload(cudaStream_t stream, void* dst, const void* host_src, size_t bytes) {
    if (bytes == 0) return cudaSuccess;
    if (bytes > kUploadBytes) return cudaErrorInvalidValue;
    UploadBytes data{};
    std::memcpy(data.words, host_src, bytes);
    // Whole words when dst is word-aligned (device allocations are), else bytes.
    if (bytes % sizeof(uint32_t) == 0 && reinterpret_cast<uintptr_t>(dst) % sizeof(uint32_t) == 0)
        upload_kernel<<<1, 32, 0, stream>>>(static_cast<uint32_t*>(dst), data,
                                            static_cast<unsigned>(bytes / sizeof(uint32_t)));
    else
        upload_bytes_kernel<<<1, 64, 0, stream>>>(static_cast<unsigned char*>(dst), data,
                                                  static_cast<unsigned>(bytes));
    return cudaGetLastError();
}

}  // namespace gputrain::cuda_kernels
