#include "device/nvml_api.hpp"

#include <dlfcn.h>

namespace gputrain::device::nvml {

namespace {

template <typename F>
bool load(void* lib, const char* name, F& fn) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    return fn != nullptr;
}

// The first required function the library lacks, or nullptr.
const char* load_api(void* lib, Api& api) {
    if (!load(lib, "nvmlInit_v2", api.init)) return "nvmlInit_v2";
    if (!load(lib, "nvmlShutdown", api.shutdown)) return "nvmlShutdown";
    if (!load(lib, "nvmlErrorString", api.error_string)) return "nvmlErrorString";
    if (!load(lib, "nvmlDeviceGetCount_v2", api.device_count)) return "nvmlDeviceGetCount_v2";
    if (!load(lib, "nvmlDeviceGetHandleByIndex_v2", api.handle_by_index)) return "nvmlDeviceGetHandleByIndex_v2";
    if (!load(lib, "nvmlDeviceGetPciInfo_v3", api.pci_info)) return "nvmlDeviceGetPciInfo_v3";
    load(lib, "nvmlSystemGetDriverVersion", api.driver_version);
    load(lib, "nvmlDeviceGetMemoryInfo", api.memory_info);
    load(lib, "nvmlDeviceGetUtilizationRates", api.utilization);
    load(lib, "nvmlDeviceGetTemperature", api.temperature);
    load(lib, "nvmlDeviceGetPowerUsage", api.power_usage);
    load(lib, "nvmlDeviceGetEnforcedPowerLimit", api.power_limit);
    load(lib, "nvmlDeviceGetNvLinkState", api.nvlink_state);
    load(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", api.nvlink_remote_pci);
    load(lib, "nvmlDeviceGetP2PStatus", api.p2p_status);
    load(lib, "nvmlDeviceGetTopologyCommonAncestor", api.common_ancestor);
    return nullptr;
}

}  // namespace

std::unique_ptr<Session> Session::open(std::string& why) {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        why = "NVML not found (libnvidia-ml.so.1 not loadable)";
        return nullptr;
    }
    Api api;
    if (const char* missing = load_api(lib, api)) {
        why = std::string("NVML (libnvidia-ml.so.1) lacks ") + missing + "; update the NVIDIA driver";
        dlclose(lib);
        return nullptr;
    }
    if (const Return r = api.init(); r != kSuccess) {
        const char* text = api.error_string(r);
        why = std::string("nvmlInit failed: ") + (text ? text : "NVML error " + std::to_string(r));
        dlclose(lib);
        return nullptr;
    }
    return std::unique_ptr<Session>(new Session(lib, api));
}

Session::~Session() {
    api_.shutdown();
    dlclose(lib_);
}

std::string Session::describe(Return r) const {
    const char* text = api_.error_string(r);
    return text ? text : "NVML error " + std::to_string(r);
}

}  // namespace gputrain::device::nvml
