// A stand-in libnvidia-ml.so.1 for unit-device-fake-driver: three GPUs at
// buses 19, 2A and 3B (NVML lists them all; the fake CUDA driver shows 3B and
// 19). Each reports values derived from its NVML index k, so a test can tell
// which one was matched. GPU 19 (k = 0) does not report its power limit.
// Environment knobs, read on every call:
//   FAKE_NVML_INIT_ERROR=N   nvmlInit_v2 returns N
//   FAKE_NVML_TOPOLOGY=switch (default: 18 links each to an NVSwitch),
//                      direct (links 0-3 join 19 and 3B, the rest go to the switch),
//                      pcie (no NVLink; common ancestor SYS)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct FakeDevice {
    unsigned index;
    const char* bus_id;
};
FakeDevice kDevices[] = {{0, "00000000:19:00.0"}, {1, "00000000:2A:00.0"}, {2, "00000000:3B:00.0"}};
constexpr unsigned kCount = 3;
constexpr const char* kSwitchBusId = "00000000:C0:00.0";

constexpr int kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3;
bool initialized = false;

struct PciInfo {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};
struct Memory {
    unsigned long long total, free, used;
};
struct Utilization {
    unsigned gpu, memory;
};

std::string topology() {
    const char* mode = std::getenv("FAKE_NVML_TOPOLOGY");
    return mode ? mode : "switch";
}

FakeDevice* device_of(void* handle) {
    for (auto& d : kDevices)
        if (handle == &d) return &d;
    return nullptr;
}

void fill_pci(PciInfo* pci, const char* bus_id) {
    std::memset(pci, 0, sizeof *pci);
    std::snprintf(pci->bus_id, sizeof pci->bus_id, "%s", bus_id);
    std::snprintf(pci->bus_id_legacy, sizeof pci->bus_id_legacy, "%s", bus_id + 4);
}

// kSuccess with `dev` set, or the error NVML would give.
int look_up(void* handle, FakeDevice*& dev) {
    if (!initialized) return kUninitialized;
    dev = device_of(handle);
    return dev ? kSuccess : kInvalidArgument;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
    if (const char* error = std::getenv("FAKE_NVML_INIT_ERROR")) return std::atoi(error);
    initialized = true;
    return kSuccess;
}
int nvmlShutdown() {
    initialized = false;
    return kSuccess;
}
const char* nvmlErrorString(int r) {
    switch (r) {
        case kSuccess: return "Success";
        case 9: return "Driver Not Loaded";
        case kNotSupported: return "Not Supported";
        default: return "Unknown Error";
    }
}
int nvmlSystemGetDriverVersion(char* version, unsigned length) {
    if (!initialized) return kUninitialized;
    std::snprintf(version, length, "570.86.15");
    return kSuccess;
}
int nvmlDeviceGetCount_v2(unsigned* count) {
    if (!initialized) return kUninitialized;
    *count = kCount;
    return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** handle) {
    if (!initialized) return kUninitialized;
    if (index >= kCount) return kInvalidArgument;
    *handle = &kDevices[index];
    return kSuccess;
}
int nvmlDeviceGetPciInfo_v3(void* handle, PciInfo* pci) {
    FakeDevice* dev = nullptr;
    if (const int r = look_up(handle, dev); r != kSuccess) return r;
    fill_pci(pci, dev->bus_id);
    return kSuccess;
}
int nvmlDeviceGetMemoryInfo(void* handle, Memory* memory) {
    FakeDevice* dev = nullptr;
    if (const int r = look_up(handle, dev); r != kSuccess) return r;
    memory->total = 150754820096ull;
    memory->used = (1ull << 30) * (dev->index + 1);
    memory->free = memory->total - memory->used;
    return kSuccess;
}
int nvmlDeviceGetUtilizationRates(void* handle, Utilization* utilization) {
    FakeDevice* dev = nullptr;
    if (const int r = look_up(handle, dev); r != kSuccess) return r;
    utilization->gpu = 10 * dev->index + 5;
    utilization->memory = 2 * dev->index;
    return kSuccess;
}
int nvmlDeviceGetTemperature(void* handle, int sensor, unsigned* celsius) {
    FakeDevice* dev = nullptr;
    if (const int r = look_up(handle, dev); r != kSuccess) return r;
    if (sensor != 0) return kInvalidArgument;
    *celsius = 30 + dev->index;
    return kSuccess;
}
int nvmlDeviceGetPowerUsage(void* handle, unsigned* milliwatts) {
    FakeDevice* dev = nullptr;
    if (const int r = look_up(handle, dev); r != kSuccess) return r;
    *milliwatts = 100000 + 1000 * dev->index;
    return kSuccess;
}
int nvmlDeviceGetEnforcedPowerLimit(void* handle, unsigned* milliwatts) {
    FakeDevice* dev = nullptr;
    if (const int r = look_up(handle, dev); r != kSuccess) return r;
    if (dev->index == 0) return kNotSupported;
    *milliwatts = 700000;
    return kSuccess;
}
int nvmlDeviceGetNvLinkState(void* handle, unsigned link, int* active) {
    FakeDevice* dev = nullptr;
    if (const int r = look_up(handle, dev); r != kSuccess) return r;
    if (topology() == "pcie") return kNotSupported;
    if (link >= 18) return kInvalidArgument;
    *active = 1;
    return kSuccess;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* handle, unsigned link, PciInfo* pci) {
    FakeDevice* dev = nullptr;
    if (const int r = look_up(handle, dev); r != kSuccess) return r;
    if (topology() == "pcie") return kNotSupported;
    if (link >= 18) return kInvalidArgument;
    const bool direct = topology() == "direct" && link < 4 && dev->index != 1;
    fill_pci(pci, direct ? kDevices[2 - dev->index].bus_id : kSwitchBusId);
    return kSuccess;
}
int nvmlDeviceGetP2PStatus(void* a, void* b, int caps_index, int* status) {
    FakeDevice* dev = nullptr;
    if (const int r = look_up(a, dev); r != kSuccess) return r;
    if (!device_of(b) || caps_index != 2) return kInvalidArgument;
    *status = topology() == "pcie" ? 5 : 0;   // NVML_P2P_STATUS_NOT_SUPPORTED : OK
    return kSuccess;
}
int nvmlDeviceGetTopologyCommonAncestor(void* a, void* b, int* level) {
    FakeDevice* dev = nullptr;
    if (const int r = look_up(a, dev); r != kSuccess) return r;
    if (!device_of(b)) return kInvalidArgument;
    *level = topology() == "pcie" ? 50 : 40;   // SYS : NODE
    return kSuccess;
}

}  // extern "C"
