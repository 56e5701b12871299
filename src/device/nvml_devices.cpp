#include "device/nvml_devices.hpp"

#include <string>

#include "device/library_versions.hpp"
#include "device/pci_bus_id.hpp"

namespace gputrain::device {

namespace {

// Every GPU NVML lists, with its bus id. NVML ignores CUDA_VISIBLE_DEVICES and
// may order GPUs differently, so its index means nothing to CUDA.
struct NvmlListing {
    std::vector<nvml::Device> devices;
    std::vector<std::string> bus_ids;
};

NvmlListing list_devices(const nvml::Session& nvml, std::string& why) {
    NvmlListing listing;
    const nvml::Api& api = nvml.api();
    unsigned count = 0;
    if (const nvml::Return r = api.device_count(&count); r != nvml::kSuccess) {
        why = "nvmlDeviceGetCount failed: " + nvml.describe(r);
        return listing;
    }
    for (unsigned k = 0; k < count; ++k) {
        nvml::Device dev = nullptr;
        nvml::PciInfo pci{};
        if (api.handle_by_index(k, &dev) != nvml::kSuccess || api.pci_info(dev, &pci) != nvml::kSuccess) continue;
        listing.devices.push_back(dev);
        listing.bus_ids.emplace_back(pci.bus_id);
    }
    return listing;
}

void read_telemetry(const nvml::Api& api, nvml::Device dev, GpuInfo& g) {
    if (nvml::Memory m{}; api.memory_info && api.memory_info(dev, &m) == nvml::kSuccess)
        g.memory_used_bytes = m.used;
    if (nvml::Utilization u{}; api.utilization && api.utilization(dev, &u) == nvml::kSuccess) {
        g.utilization_percent = u.gpu;
        g.memory_utilization_percent = u.memory;
    }
    unsigned value = 0;
    if (api.temperature && api.temperature(dev, nvml::kTemperatureGpu, &value) == nvml::kSuccess)
        g.temperature_celsius = value;
    if (api.power_usage && api.power_usage(dev, &value) == nvml::kSuccess) g.power_draw_milliwatts = value;
    if (api.power_limit && api.power_limit(dev, &value) == nvml::kSuccess) g.power_limit_milliwatts = value;
}

void append(std::string& message, const std::string& part) {
    message += (message.empty() ? "" : "; ") + part;
}

}  // namespace

void read_nvml(Discovery& d) {
    std::string why;
    const auto nvml = nvml::Session::open(why);
    if (!nvml) {
        d.nvml_message = why;
        d.nvidia_driver_version = read_nvrm_version();
        return;
    }
    const nvml::Api& api = nvml->api();
    if (char version[nvml::kDriverVersionBufferSize] = {};
        api.driver_version && api.driver_version(version, sizeof version) == nvml::kSuccess)
        d.nvidia_driver_version = version;
    else
        d.nvidia_driver_version = read_nvrm_version();

    const NvmlListing listing = list_devices(*nvml, why);
    if (!why.empty()) d.nvml_message = why;
    std::vector<std::string> cuda_ids;
    for (const auto& g : d.gpus) cuda_ids.push_back(g.pci_bus_id);
    const auto positions = match_pci_bus_ids(cuda_ids, listing.bus_ids);

    std::vector<std::optional<nvml::Device>> handles(d.gpus.size());
    for (size_t i = 0; i < d.gpus.size(); ++i) {
        GpuInfo& g = d.gpus[i];
        if (!positions[i]) {
            if (why.empty())
                append(d.nvml_message, g.pci_bus_id.empty()
                                           ? "GPU " + std::to_string(g.index) + " has no PCI bus id to find it in NVML"
                                           : "NVML does not list GPU " + std::to_string(g.index) + " (" +
                                                 g.pci_bus_id + ")");
            continue;
        }
        handles[i] = listing.devices[*positions[i]];
        read_telemetry(api, *handles[i], g);
    }
    read_nvml_topology(*nvml, handles, d);
}

}  // namespace gputrain::device
