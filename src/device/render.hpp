// What `gputrain devices` prints, as text from a Discovery, so that every
// layout can be tested with hand-built values on a machine without a GPU.
#pragma once

#include <string>

#include "device/devices.hpp"

namespace gputrain::device {

// "Versions: NVIDIA driver 550.54.15, CUDA 12.4, cuDNN 9.1.0, NCCL 2.21.5"
std::string render_versions(const Discovery& d);

// The GPU table (index, name, bus id, memory used/total, utilization,
// temperature, power draw/limit, compute capability, SMs) with the versions
// line above, a note when a cell reads n/a and one when this build has no
// CUDA (training uses the CPU then); or the "No GPU: ..." line. Then the CPU.
std::string render_table(const Discovery& d);

// The link and peer-access matrices between the GPUs, in the words of
// nvidia-smi topo (NV18, PIX, SYS, ...).
std::string render_topology(const Discovery& d);

// One JSON object: driver, versions, gpus (null for what could not be read),
// cpu, cuda_built, training_device ("cpu" in a build without CUDA).
std::string render_json(const Discovery& d);

}  // namespace gputrain::device
