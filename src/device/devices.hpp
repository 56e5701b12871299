// Device discovery: which GPUs the CUDA driver shows (loaded at run time with
// dlopen, so the binary runs on machines without one) and what the CPU is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gputrain::device {

struct GpuInfo {
    int index = 0;
    std::string name;
    uint64_t memory_bytes = 0;
    int compute_major = 0, compute_minor = 0;
    int multiprocessors = 0;
};

struct CpuInfo {
    std::string model;        // "AMD EPYC 7B13"
    int logical_cores = 0;    // usable by this process
    uint64_t memory_bytes = 0;
};

struct Discovery {
    bool driver_found = false;
    std::string driver_message;   // why there are no GPUs, when there are none
    int driver_version = 0;       // e.g. 12040
    std::vector<GpuInfo> gpus;
    CpuInfo cpu;
};

Discovery discover();
CpuInfo cpu_info();

// "1.5 GiB" style.
std::string format_bytes(uint64_t bytes);

}  // namespace gputrain::device
