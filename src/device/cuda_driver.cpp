// GPU discovery through the CUDA driver API, loaded with dlopen: the binary
// needs no driver to start, and says plainly when there is none.
#include <dlfcn.h>

#include <string>

#include "device/devices.hpp"

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

}  // namespace

Discovery discover() {
    Discovery d;
    d.cpu = cpu_info();
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        d.driver_message = "no CUDA driver found (libcuda.so.1 not loadable)";
        return d;
    }
    DriverApi api;
    if (!load(lib, "cuInit", api.init) || !load(lib, "cuDriverGetVersion", api.driver_version) ||
        !load(lib, "cuDeviceGetCount", api.device_count) || !load(lib, "cuDeviceGet", api.device_get) ||
        !load(lib, "cuDeviceGetName", api.device_name) || !load(lib, "cuDeviceTotalMem_v2", api.total_mem) ||
        !load(lib, "cuDeviceGetAttribute", api.attribute)) {
        d.driver_message = "the CUDA driver (libcuda.so.1) lacks the expected functions; update the NVIDIA driver";
        return d;
    }
    load(lib, "cuGetErrorString", api.error_string);
    d.driver_found = true;
    if (CuResult r = api.init(0); r != 0) {
        d.driver_message = "CUDA driver present but cuInit failed: " + describe(api, r);
        return d;
    }
    api.driver_version(&d.driver_version);
    int count = 0;
    if (CuResult r = api.device_count(&count); r != 0 || count == 0) {
        d.driver_message = r != 0 ? "cuDeviceGetCount failed: " + describe(api, r) : "the CUDA driver sees no GPU";
        return d;
    }
    for (int i = 0; i < count; ++i) {
        CuDevice dev = 0;
        if (api.device_get(&dev, i) != 0) continue;
        GpuInfo g;
        g.index = i;
        char name[256] = {};
        api.device_name(name, sizeof name, dev);
        g.name = name;
        size_t mem = 0;
        api.total_mem(&mem, dev);
        g.memory_bytes = mem;
        api.attribute(&g.compute_major, kAttrComputeMajor, dev);
        api.attribute(&g.compute_minor, kAttrComputeMinor, dev);
        api.attribute(&g.multiprocessors, kAttrMultiprocessors, dev);
        d.gpus.push_back(g);
    }
    return d;
}

}  // namespace gputrain::device
