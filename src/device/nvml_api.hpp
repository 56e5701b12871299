// NVML (libnvidia-ml.so.1), loaded with dlopen so the binary runs where it is
// missing. No nvml.h is needed: the few types and functions used are declared
// here, laid out as in NVIDIA's header (C enums are passed as int).
#pragma once

#include <memory>
#include <string>

namespace gputrain::device::nvml {

using Return = int;                         // nvmlReturn_t
constexpr Return kSuccess = 0;              // NVML_SUCCESS
constexpr Return kErrorInvalidArgument = 2; // NVML_ERROR_INVALID_ARGUMENT
constexpr Return kErrorNotSupported = 3;    // NVML_ERROR_NOT_SUPPORTED

using Device = struct DeviceOpaque*;        // nvmlDevice_t

struct Memory {                             // nvmlMemory_t
    unsigned long long total, free, used;
};

struct Utilization {                        // nvmlUtilization_t, percent over the last sample period
    unsigned int gpu, memory;
};

struct PciInfo {                            // nvmlPciInfo_t, as filled by nvmlDeviceGetPciInfo_v3
    char bus_id_legacy[16];                 // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
    unsigned int domain, bus, device;
    unsigned int pci_device_id, pci_subsystem_id;
    char bus_id[32];                        // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000000:19:00.0"
};

constexpr int kTemperatureGpu = 0;          // NVML_TEMPERATURE_GPU
constexpr int kFeatureEnabled = 1;          // NVML_FEATURE_ENABLED
constexpr unsigned kMaxNvLinks = 18;        // NVML_NVLINK_MAX_LINKS
constexpr int kP2pCapsIndexNvlink = 2;      // NVML_P2P_CAPS_INDEX_NVLINK
constexpr int kP2pStatusOk = 0;             // NVML_P2P_STATUS_OK
constexpr unsigned kDriverVersionBufferSize = 80;   // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

struct Api {
    // Required: without them NVML is reported as unusable.
    Return (*init)() = nullptr;                                   // nvmlInit_v2
    Return (*shutdown)() = nullptr;                               // nvmlShutdown
    const char* (*error_string)(Return) = nullptr;                // nvmlErrorString
    Return (*device_count)(unsigned*) = nullptr;                  // nvmlDeviceGetCount_v2
    Return (*handle_by_index)(unsigned, Device*) = nullptr;       // nvmlDeviceGetHandleByIndex_v2
    Return (*pci_info)(Device, PciInfo*) = nullptr;               // nvmlDeviceGetPciInfo_v3
    // Optional: a missing one reads as n/a.
    Return (*driver_version)(char*, unsigned) = nullptr;          // nvmlSystemGetDriverVersion
    Return (*memory_info)(Device, Memory*) = nullptr;             // nvmlDeviceGetMemoryInfo
    Return (*utilization)(Device, Utilization*) = nullptr;        // nvmlDeviceGetUtilizationRates
    Return (*temperature)(Device, int, unsigned*) = nullptr;      // nvmlDeviceGetTemperature, degrees C
    Return (*power_usage)(Device, unsigned*) = nullptr;           // nvmlDeviceGetPowerUsage, mW
    Return (*power_limit)(Device, unsigned*) = nullptr;           // nvmlDeviceGetEnforcedPowerLimit, mW
    Return (*nvlink_state)(Device, unsigned, int*) = nullptr;     // nvmlDeviceGetNvLinkState
    Return (*nvlink_remote_pci)(Device, unsigned, PciInfo*) = nullptr;   // nvmlDeviceGetNvLinkRemotePciInfo_v2
    Return (*p2p_status)(Device, Device, int, int*) = nullptr;    // nvmlDeviceGetP2PStatus
    Return (*common_ancestor)(Device, Device, int*) = nullptr;    // nvmlDeviceGetTopologyCommonAncestor
};

// An initialized NVML: nvmlInit_v2 on open; nvmlShutdown and dlclose when destroyed.
class Session {
public:
    // Null, with `why` saying so, when the library is missing, lacks a required
    // function, or nvmlInit fails.
    static std::unique_ptr<Session> open(std::string& why);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const Api& api() const { return api_; }
    // nvmlErrorString, or "NVML error N".
    std::string describe(Return r) const;

private:
    Session(void* lib, const Api& api) : lib_(lib), api_(api) {}
    void* lib_;
    Api api_;
};

}  // namespace gputrain::device::nvml
