// PCI bus ids as the CUDA driver ("0000:19:00.0") and NVML ("00000000:19:00.0")
// write them. Matching GPUs by bus id is what lets the NVML columns follow
// CUDA_VISIBLE_DEVICES, which NVML itself ignores.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputrain::device {

struct PciAddress {
    unsigned domain = 0, bus = 0, device = 0, function = 0;
    bool operator==(const PciAddress&) const = default;
};

// Accepts "domain:bus:device.function" and "bus:device.function" (hex, any
// case, any domain width); empty for anything else.
std::optional<PciAddress> parse_pci_bus_id(std::string_view text);

// "0000:19:00.0", the CUDA driver's form.
std::string format_pci_bus_id(const PciAddress& address);

// For each of `wanted`, the position in `listed` of the same PCI device; empty
// when it is not listed or either id does not parse.
std::vector<std::optional<size_t>> match_pci_bus_ids(const std::vector<std::string>& wanted,
                                                     const std::vector<std::string>& listed);

}  // namespace gputrain::device
