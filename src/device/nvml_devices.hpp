// What NVML says about the GPUs the CUDA driver found.
#pragma once

#include <optional>
#include <vector>

#include "device/devices.hpp"
#include "device/nvml_api.hpp"

namespace gputrain::device {

// Fills nvidia_driver_version, nvml_message and, for each GPU NVML lists under
// the same PCI bus id, memory use, utilization, temperature, power and the
// NVLink topology. Never throws: what cannot be read stays empty and
// nvml_message says why when the reason is not per value.
void read_nvml(Discovery& d);

// NVLink links per GPU and per pair, and the PCIe path per pair; handles[i]
// is gpus[i]'s NVML device, empty when NVML does not list it.
void read_nvml_topology(const nvml::Session& nvml, const std::vector<std::optional<nvml::Device>>& handles,
                        Discovery& d);

}  // namespace gputrain::device
