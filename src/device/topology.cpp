// How the GPUs reach each other, as NVML sees it: NVLink links (direct, or
// through NVSwitches) and otherwise the PCIe path, in nvidia-smi topo's words.
#include <algorithm>

#include "device/nvml_devices.hpp"
#include "device/pci_bus_id.hpp"

namespace gputrain::device {

namespace {

// nvmlGpuTopologyLevel_t -> nvidia-smi topo's abbreviation.
std::string pcie_path_name(int level) {
    switch (level) {
        case 0: return "BRD";    // NVML_TOPOLOGY_INTERNAL: two GPUs on one board
        case 10: return "PIX";   // NVML_TOPOLOGY_SINGLE: one PCIe switch
        case 20: return "PXB";   // NVML_TOPOLOGY_MULTIPLE: several PCIe switches
        case 30: return "PHB";   // NVML_TOPOLOGY_HOSTBRIDGE: a PCIe host bridge
        case 40: return "NODE";  // NVML_TOPOLOGY_NODE: host bridges of one NUMA node
        case 50: return "SYS";   // NVML_TOPOLOGY_SYSTEM: across NUMA nodes
        default: return "";
    }
}

// One GPU's active NVLink links and the device at the far end of each.
struct NvLinks {
    std::optional<unsigned> active;            // empty when NVML would not say
    std::vector<std::optional<PciAddress>> remotes;
};

NvLinks read_nvlinks(const nvml::Api& api, nvml::Device dev) {
    NvLinks links;
    if (!api.nvlink_state) return links;
    unsigned active = 0;
    for (unsigned link = 0; link < nvml::kMaxNvLinks; ++link) {
        int state = 0;
        const nvml::Return r = api.nvlink_state(dev, link, &state);
        // Past this GPU's last link, or a GPU without NVLink: not an error.
        if (r == nvml::kErrorInvalidArgument || r == nvml::kErrorNotSupported) continue;
        if (r != nvml::kSuccess) return links;
        if (state != nvml::kFeatureEnabled) continue;
        ++active;
        nvml::PciInfo remote{};
        if (api.nvlink_remote_pci && api.nvlink_remote_pci(dev, link, &remote) == nvml::kSuccess)
            links.remotes.push_back(parse_pci_bus_id(remote.bus_id));
    }
    links.active = active;
    return links;
}

// Links from a to b: direct links when the far ends are b; through NVSwitches
// (the far ends are switches) when NVML says the pair talks over NVLink.
std::optional<unsigned> pair_nvlinks(const nvml::Api& api, nvml::Device a, nvml::Device b, const NvLinks& a_links,
                                     const NvLinks& b_links, const std::optional<PciAddress>& b_address) {
    if (!a_links.active || !b_links.active) return std::nullopt;
    if (*a_links.active == 0 || *b_links.active == 0) return 0u;
    const auto direct = static_cast<unsigned>(
        b_address ? std::count(a_links.remotes.begin(), a_links.remotes.end(), b_address) : 0);
    if (direct > 0) return direct;
    int status = 0;
    if (!api.p2p_status || api.p2p_status(a, b, nvml::kP2pCapsIndexNvlink, &status) != nvml::kSuccess)
        return std::nullopt;
    return status == nvml::kP2pStatusOk ? std::min(*a_links.active, *b_links.active) : 0u;
}

}  // namespace

void read_nvml_topology(const nvml::Session& nvml, const std::vector<std::optional<nvml::Device>>& handles,
                        Discovery& d) {
    const nvml::Api& api = nvml.api();
    const size_t n = d.gpus.size();
    d.topology.resize(n, std::vector<PeerLink>(n));
    std::vector<NvLinks> links(n);
    for (size_t i = 0; i < n; ++i) {
        if (!handles[i]) continue;
        links[i] = read_nvlinks(api, *handles[i]);
        d.gpus[i].nvlink_active_links = links[i].active;
    }
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            if (i == j || !handles[i] || !handles[j]) continue;
            PeerLink& link = d.topology[i][j];
            link.nvlinks = pair_nvlinks(api, *handles[i], *handles[j], links[i], links[j],
                                        parse_pci_bus_id(d.gpus[j].pci_bus_id));
            int level = 0;
            if (api.common_ancestor && api.common_ancestor(*handles[i], *handles[j], &level) == nvml::kSuccess)
                link.pcie_path = pcie_path_name(level);
        }
}

}  // namespace gputrain::device
