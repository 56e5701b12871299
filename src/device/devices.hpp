// Device discovery: which GPUs the CUDA driver shows (loaded at run time with
// dlopen, so the binary runs on machines without one), what NVML says about
// them (memory use, utilization, temperature, power, NVLink), the versions of
// the GPU libraries, and what the CPU is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gputrain::device {

struct GpuInfo {
    int index = 0;                 // CUDA device ordinal (after CUDA_VISIBLE_DEVICES)
    std::string name;
    uint64_t memory_bytes = 0;     // total, from the CUDA driver
    int compute_major = 0, compute_minor = 0;
    int multiprocessors = 0;
    std::string pci_bus_id;        // "0000:19:00.0"; empty when the driver did not say

    // From NVML, matched to this GPU by PCI bus id; empty when NVML is missing
    // or does not report the value for this GPU.
    std::optional<uint64_t> memory_used_bytes;
    std::optional<unsigned> utilization_percent;         // time a kernel was running
    std::optional<unsigned> memory_utilization_percent;  // time memory was read or written
    std::optional<unsigned> temperature_celsius;
    std::optional<unsigned> power_draw_milliwatts;
    std::optional<unsigned> power_limit_milliwatts;      // the enforced limit
    std::optional<unsigned> nvlink_active_links;         // 0: the GPU has no active NVLink
};

// How one GPU reaches another (Discovery::topology).
struct PeerLink {
    std::optional<bool> peer_access;   // cuDeviceCanAccessPeer; empty when it failed
    std::optional<unsigned> nvlinks;   // NVLink links joining the pair (NVML); 0: none
    std::string pcie_path;             // "PIX", "PXB", "PHB", "NODE", "SYS", "BRD"; empty: unknown
};

struct CpuInfo {
    std::string model;        // "AMD EPYC 7B13"
    int logical_cores = 0;    // usable by this process
    uint64_t memory_bytes = 0;
    int physical_cores = 0;   // of those, one per core (SMT siblings counted once); 0: unknown
};

struct Discovery {
    // Whether this gputrain has the CUDA backend (GPUTRAIN_HAVE_CUDA). Without
    // it the GPUs found are listed, but training runs on the CPU.
    bool cuda_built = true;
    bool driver_found = false;
    std::string driver_message;   // why there are no GPUs, when there are none
    std::string visible_devices_note;  // with GPUs: CUDA_VISIBLE_DEVICES hides some it seems meant to show
    int driver_version = 0;       // CUDA version of the driver (cuDriverGetVersion), e.g. 12040
    std::vector<GpuInfo> gpus;
    CpuInfo cpu;

    // topology[i][j]: how gpus[i] reaches gpus[j]; peer access always,
    // NVLink and PCIe path with Detail::full. The diagonal is unused.
    std::vector<std::vector<PeerLink>> topology;

    // Filled by discover(Detail::full) only.
    std::string nvidia_driver_version;       // "550.54.15"; empty when unknown
    std::string nvml_message;                // why NVML values are missing; empty when NVML answered
    std::optional<int> cudnn_version;        // cudnnGetVersion(), e.g. 90100; empty: libcudnn.so.9 not found
    std::optional<int> nccl_version;         // ncclGetVersion(), e.g. 22105; empty: libnccl.so.2 not found
};

// basic: the CUDA driver's view and the CPU (fast; what training needs).
// full: also NVML telemetry, the NVLink/PCIe topology and library versions.
enum class Detail { basic, full };

Discovery discover(Detail detail = Detail::basic);
CpuInfo cpu_info();

// "1.5 GiB" style.
std::string format_bytes(uint64_t bytes);

}  // namespace gputrain::device
