// The reduction kernel of the device communicator: out[i] = sum over k of
// buffers[k][i], in k order, for i in [begin, end).
#pragma once

#include <cstddef>

namespace gputrain::dist {

constexpr int kMaxDeviceRanks = 32;

struct DeviceBuffers {
    const float* ptr[kMaxDeviceRanks];
    int count;
};

// Enqueues on `stream` (a cudaStream_t).
void launch_sum_buffers(const DeviceBuffers& buffers, float* out, size_t begin, size_t end, void* stream);

}  // namespace gputrain::dist
