#include <cuda_runtime.h>

#include "dist/device_reduce.hpp"

namespace gputrain::dist {

namespace {

__global__ void sum_buffers_kernel(DeviceBuffers buffers, float* out, size_t begin, size_t end) {
    for (size_t i = begin + blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < end;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        float s = buffers.ptr[0][i];
        for (int k = 1; k < buffers.count; ++k) s += buffers.ptr[k][i];
        out[i] = s;
    }
}

__global__ void sum_into_all_kernel(DeviceBuffers buffers, size_t count) {
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        float s = buffers.ptr[0][i];
        for (int k = 1; k < buffers.count; ++k) s += buffers.ptr[k][i];
        for (int k = 0; k < buffers.count; ++k) buffers.ptr[k][i] = s;
    }
}

}  // namespace

void launch_sum_into_all(const DeviceBuffers& buffers, size_t count, void* stream) {
    if (count == 0) return;
    constexpr int threads = 256;
    const size_t blocks = std::min<size_t>((count + threads - 1) / threads, 4096);
    sum_into_all_kernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(buffers,
                                                                                                         count);
}

void launch_sum_buffers(const DeviceBuffers& buffers, float* out, size_t begin, size_t end, void* stream) {
    if (end <= begin) return;
    constexpr int threads = 256;
    const size_t blocks = std::min<size_t>((end - begin + threads - 1) / threads, 4096);
    sum_buffers_kernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(
        buffers, out, begin, end);
}

}  // namespace gputrain::dist
