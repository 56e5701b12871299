// Hand-built Discovery values: what discover() would return on an HGX H200
// box (two GPUs, some values NVML did not give) and on a machine with no GPU.
#pragma once

#include "device/devices.hpp"

namespace gputrain::device::samples {

constexpr uint64_t kH200Bytes = 150754820096ull;   // 140.4 GiB

inline CpuInfo epyc() {
    return CpuInfo{"AMD EPYC 9654 96-Core Processor", 192, 1649267441664ull};   // 1.5 TiB
}

inline GpuInfo h200(int index, const std::string& bus_id) {
    GpuInfo g;
    g.index = index;
    g.name = "NVIDIA H200";
    g.memory_bytes = kH200Bytes;
    g.compute_major = 9;
    g.compute_minor = 0;
    g.multiprocessors = 132;
    g.pci_bus_id = bus_id;
    return g;
}

// GPU 0 reports everything; GPU 1 gives no memory use, utilization,
// temperature or power draw (as a GPU under MIG or an old driver might).
inline Discovery two_h200s() {
    Discovery d;
    d.driver_found = true;
    d.driver_version = 12080;
    d.nvidia_driver_version = "570.86.15";
    d.cudnn_version = 90100;
    d.nccl_version = 22105;
    d.cpu = epyc();
    GpuInfo a = h200(0, "0000:19:00.0");
    a.memory_used_bytes = 1610612736ull;   // 1.5 GiB
    a.utilization_percent = 35;
    a.memory_utilization_percent = 12;
    a.temperature_celsius = 41;
    a.power_draw_milliwatts = 250400;
    a.power_limit_milliwatts = 700000;
    a.nvlink_active_links = 18;
    GpuInfo b = h200(1, "0000:3b:00.0");
    b.power_limit_milliwatts = 700000;
    b.nvlink_active_links = 18;
    d.gpus = {a, b};
    d.topology = {{PeerLink{}, PeerLink{true, 18u, "NODE"}}, {PeerLink{true, 18u, "NODE"}, PeerLink{}}};
    return d;
}

inline Discovery no_gpu() {
    Discovery d;
    d.driver_message = "no CUDA driver found (libcuda.so.1 not loadable)";
    d.nvml_message = "NVML not found (libnvidia-ml.so.1 not loadable)";
    d.cudnn_version = 90100;
    d.cpu = epyc();
    return d;
}

}  // namespace gputrain::device::samples
