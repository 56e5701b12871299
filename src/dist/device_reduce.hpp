// The reduction kernels of the device communicator: sums over k of
// buffers[k][i], in k order (bit-identical on every rank).
#pragma once

#include <cstddef>

namespace gputrain::dist {

constexpr int kMaxDeviceRanks = 32;

struct DeviceBuffers {
    float* ptr[kMaxDeviceRanks];
    int count;
};

// out[i] = the sum for i in [begin, end). Enqueues on `stream` (a cudaStream_t).
void launch_sum_buffers(const DeviceBuffers& buffers, float* out, size_t begin, size_t end, void* stream);
// buffers[k][i] = the sum for every k and i < count: the whole all-reduce in
// one kernel (the asynchronous path). Enqueues on `stream`.
void launch_sum_into_all(const DeviceBuffers& buffers, size_t count, void* stream);

}  // namespace gputrain::dist
