// The CUDA driver's view of the GPUs (libcuda.so.1, loaded with dlopen).
#pragma once

#include "device/devices.hpp"

namespace gputrain::device {

// Fills driver_found, driver_message, driver_version, gpus (index, name,
// memory, compute capability, SMs, PCI bus id) and topology's peer access.
// Never throws: what cannot be read is said in driver_message.
void read_cuda_devices(Discovery& d);

}  // namespace gputrain::device
