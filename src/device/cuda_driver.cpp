// GPU discovery through the CUDA driver API, loaded with dlopen: the binary
// needs no driver to start, and says plainly when there is none.
#include "device/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "device/pci_bus_id.hpp"
#include "device/visible_devices.hpp"

namespace gputrain::device {

namespace {

using CuResult = int;
using CuDevice = int;
constexpr int kAttrMultiprocessors = 16;   // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrComputeMajor = 75;      // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeMinor = 76;      // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

struct DriverApi {
    CuResult (*init)(unsigned) = nullptr;
    CuResult (*driver_version)(int*) = nullptr;
    CuResult (*device_count)(int*) = nullptr;
    CuResult (*device_get)(CuDevice*, int) = nullptr;
    CuResult (*device_name)(char*, int, CuDevice) = nullptr;
    CuResult (*total_mem)(size_t*, CuDevice) = nullptr;
    CuResult (*attribute)(int*, int, CuDevice) = nullptr;
    // Optional: without them the bus id and peer access read as unknown.
    CuResult (*pci_bus_id)(char*, int, CuDevice) = nullptr;
    CuResult (*can_access_peer)(int*, CuDevice, CuDevice) = nullptr;
    CuResult (*error_string)(CuResult, const char**) = nullptr;
};

template <typename F>
bool load(void* lib, const char* name, F& fn) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    return fn != nullptr;
}

std::string describe(const DriverApi& api, CuResult r) {
    const char* text = nullptr;
    if (api.error_string && api.error_string(r, &text) == 0 && text) return text;
    return "CUDA error " + std::to_string(r);
}

// Why the driver shows no GPU, naming CUDA_VISIBLE_DEVICES when it is set:
// it is the usual reason when there are GPUs.
std::string no_gpu_reason(std::string reason) {
    if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
        const std::string problem = visible_devices_problem(visible);
        reason += problem.empty() ? std::string(" (CUDA_VISIBLE_DEVICES=\"") + visible + "\")" : "; " + problem;
    }
    return reason;
}

GpuInfo read_gpu(const DriverApi& api, CuDevice dev, int index) {
    GpuInfo g;
    g.index = index;
    char name[256] = {};
    api.device_name(name, sizeof name, dev);
    g.name = name;
    size_t mem = 0;
    api.total_mem(&mem, dev);
    g.memory_bytes = mem;
    api.attribute(&g.compute_major, kAttrComputeMajor, dev);
    api.attribute(&g.compute_minor, kAttrComputeMinor, dev);
    api.attribute(&g.multiprocessors, kAttrMultiprocessors, dev);
    char bus_id[64] = {};
    if (api.pci_bus_id && api.pci_bus_id(bus_id, sizeof bus_id, dev) == 0) {
        // One spelling (lspci's), whatever the driver's case and domain width.
        const auto address = parse_pci_bus_id(bus_id);
        g.pci_bus_id = address ? format_pci_bus_id(*address) : bus_id;
    }
    return g;
}

void read_peer_access(const DriverApi& api, const std::vector<CuDevice>& devices, Discovery& d) {
    const size_t n = devices.size();
    d.topology.assign(n, std::vector<PeerLink>(n));
    if (!api.can_access_peer) return;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            int can = 0;
            if (i != j && api.can_access_peer(&can, devices[i], devices[j]) == 0) d.topology[i][j].peer_access = can != 0;
        }
}

}  // namespace

void read_cuda_devices(Discovery& d) {
    // libcuda is never closed: the driver keeps state for the life of the process.
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        d.driver_message = "no CUDA driver found (libcuda.so.1 not loadable)";
        return;
    }
    DriverApi api;
    if (!load(lib, "cuInit", api.init) || !load(lib, "cuDriverGetVersion", api.driver_version) ||
        !load(lib, "cuDeviceGetCount", api.device_count) || !load(lib, "cuDeviceGet", api.device_get) ||
        !load(lib, "cuDeviceGetName", api.device_name) || !load(lib, "cuDeviceTotalMem_v2", api.total_mem) ||
        !load(lib, "cuDeviceGetAttribute", api.attribute)) {
        d.driver_message = "the CUDA driver (libcuda.so.1) lacks the expected functions; update the NVIDIA driver";
        return;
    }
    load(lib, "cuDeviceGetPCIBusId", api.pci_bus_id);
    load(lib, "cuDeviceCanAccessPeer", api.can_access_peer);
    load(lib, "cuGetErrorString", api.error_string);
    d.driver_found = true;
    // The version needs no cuInit, so it is known even when cuInit fails.
    api.driver_version(&d.driver_version);
    if (CuResult r = api.init(0); r != 0) {
        d.driver_message = no_gpu_reason("CUDA driver present but cuInit failed: " + describe(api, r));
        return;
    }
    int count = 0;
    if (CuResult r = api.device_count(&count); r != 0 || count == 0) {
        d.driver_message =
            no_gpu_reason(r != 0 ? "cuDeviceGetCount failed: " + describe(api, r) : "the CUDA driver sees no GPU");
        return;
    }
    std::vector<CuDevice> devices;
    for (int i = 0; i < count; ++i) {
        CuDevice dev = 0;
        if (api.device_get(&dev, i) != 0) continue;
        d.gpus.push_back(read_gpu(api, dev, i));
        devices.push_back(dev);
    }
    read_peer_access(api, devices, d);
    // GPUs were found, but maybe fewer than the variable meant to show.
    if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) d.visible_devices_note = visible_devices_problem(visible);
}

}  // namespace gputrain::device
