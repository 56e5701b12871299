// A stand-in libcuda.so.1 for unit-device-fake-driver: two H200s, ordered as
// CUDA_VISIBLE_DEVICES=2,0 would show them (the one at bus 3B first), so
// matching to NVML must go by bus id, not by index. Only what
// device/cuda_driver.cpp calls is here.
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct FakeGpu {
    const char* bus_id;   // as the driver writes it: upper-case hex
};
constexpr FakeGpu kGpus[] = {{"0000:3B:00.0"}, {"0000:19:00.0"}};
constexpr int kCount = 2;
constexpr int kNoDevice = 100;        // CUDA_ERROR_NO_DEVICE
constexpr int kInvalidDevice = 101;   // CUDA_ERROR_INVALID_DEVICE

bool valid(int dev) { return dev >= 0 && dev < kCount; }

}  // namespace

extern "C" {

// Like the real driver, an empty CUDA_VISIBLE_DEVICES hides every GPU.
int cuInit(unsigned) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return visible && !*visible ? kNoDevice : 0;
}
int cuDriverGetVersion(int* version) {
    *version = 12080;
    return 0;
}
int cuDeviceGetCount(int* count) {
    *count = kCount;
    return 0;
}
int cuDeviceGet(int* dev, int ordinal) {
    if (!valid(ordinal)) return kInvalidDevice;
    *dev = ordinal;
    return 0;
}
int cuDeviceGetName(char* name, int len, int dev) {
    if (!valid(dev)) return kInvalidDevice;
    std::snprintf(name, static_cast<size_t>(len), "NVIDIA H200");
    return 0;
}
int cuDeviceTotalMem_v2(size_t* bytes, int dev) {
    if (!valid(dev)) return kInvalidDevice;
    *bytes = 150754820096ull;
    return 0;
}
int cuDeviceGetAttribute(int* value, int attribute, int dev) {
    if (!valid(dev)) return kInvalidDevice;
    switch (attribute) {
        case 16: *value = 132; return 0;   // multiprocessors
        case 75: *value = 9; return 0;     // compute capability major
        case 76: *value = 0; return 0;     // minor
        default: return 1;                 // CUDA_ERROR_INVALID_VALUE
    }
}
int cuDeviceGetPCIBusId(char* bus_id, int len, int dev) {
    if (!valid(dev)) return kInvalidDevice;
    std::snprintf(bus_id, static_cast<size_t>(len), "%s", kGpus[dev].bus_id);
    return 0;
}
int cuDeviceCanAccessPeer(int* can, int dev, int peer) {
    if (!valid(dev) || !valid(peer)) return kInvalidDevice;
    *can = dev != peer;
    return 0;
}
int cuGetErrorString(int error, const char** text) {
    *text = error == kNoDevice        ? "no CUDA-capable device is detected"
            : error == kInvalidDevice ? "invalid device ordinal"
                                      : "unknown error";
    return 0;
}

}  // extern "C"
