#include "device/render.hpp"

#include <algorithm>
#include <vector>

#include "device/library_versions.hpp"

namespace gputrain::device {

namespace {

const std::string kNotAvailable = "n/a";

using Rows = std::vector<std::vector<std::string>>;

// Left-aligned columns two spaces apart, each as wide as its widest cell.
std::string render_columns(const Rows& rows) {
    std::vector<size_t> widths;
    for (const auto& row : rows)
        for (size_t c = 0; c < row.size(); ++c) {
            if (widths.size() <= c) widths.push_back(0);
            widths[c] = std::max(widths[c], row[c].size());
        }
    std::string out;
    for (const auto& row : rows) {
        std::string line;
        for (size_t c = 0; c < row.size(); ++c) {
            line += row[c];
            if (c + 1 < row.size()) line.append(widths[c] - row[c].size() + 2, ' ');
        }
        out += line + "\n";
    }
    return out;
}

template <typename T, typename F>
std::string or_na(const std::optional<T>& value, F format) {
    return value ? format(*value) : kNotAvailable;
}

std::string watts(unsigned milliwatts) { return std::to_string((milliwatts + 500) / 1000) + " W"; }

// Whether any NVML cell of the table reads n/a.
bool any_not_available(const Discovery& d) {
    for (const auto& g : d.gpus)
        if (g.pci_bus_id.empty() || !g.memory_used_bytes || !g.utilization_percent || !g.temperature_celsius ||
            !g.power_draw_milliwatts || !g.power_limit_milliwatts)
            return true;
    return false;
}

std::string not_available_note(const Discovery& d) {
    return "Note: n/a = not readable: " +
           (d.nvml_message.empty() ? std::string("NVML does not report it for this GPU") : d.nvml_message) + "\n";
}

std::string no_gpu_line(const Discovery& d, const char* consequence) {
    return "No GPU: " + d.driver_message + "; " + consequence + "\n";
}

// The words fit uses (train/strategy.cpp) when it falls back to the CPU for this reason.
const std::string kBuiltWithoutCuda = "this gputrain was built without CUDA (rebuild with meson -Dcuda=enabled)";

std::string render_gpus(const Discovery& d) {
    Rows rows{{"GPU", "Name", "Bus ID", "Memory used / total", "Util", "Temp", "Power draw / limit", "Compute",
               "SMs"}};
    for (const auto& g : d.gpus) {
        rows.push_back({std::to_string(g.index), g.name, g.pci_bus_id.empty() ? kNotAvailable : g.pci_bus_id,
                        or_na(g.memory_used_bytes, format_bytes) + " / " + format_bytes(g.memory_bytes),
                        or_na(g.utilization_percent, [](unsigned p) { return std::to_string(p) + "%"; }),
                        or_na(g.temperature_celsius, [](unsigned c) { return std::to_string(c) + " C"; }),
                        or_na(g.power_draw_milliwatts, watts) + " / " + or_na(g.power_limit_milliwatts, watts),
                        std::to_string(g.compute_major) + "." + std::to_string(g.compute_minor),
                        std::to_string(g.multiprocessors)});
    }
    return render_columns(rows);
}

std::string render_cpu(const CpuInfo& cpu) {
    return render_columns({{"CPU", "Model", "Memory", "Cores"},
                           {"0", cpu.model, format_bytes(cpu.memory_bytes), std::to_string(cpu.logical_cores)}});
}

std::string link_cell(const PeerLink& link) {
    if (link.nvlinks && *link.nvlinks > 0) return "NV" + std::to_string(*link.nvlinks);
    return link.pcie_path.empty() ? kNotAvailable : link.pcie_path;
}

std::string peer_cell(const PeerLink& link) {
    return link.peer_access ? (*link.peer_access ? "yes" : "no") : kNotAvailable;
}

template <typename Cell>
std::string render_matrix(const Discovery& d, const std::string& title, Cell cell) {
    Rows rows{{title}};
    for (const auto& g : d.gpus) rows[0].push_back("GPU" + std::to_string(g.index));
    for (size_t i = 0; i < d.gpus.size(); ++i) {
        rows.push_back({"GPU" + std::to_string(d.gpus[i].index)});
        for (size_t j = 0; j < d.gpus.size(); ++j) {
            const bool known = i < d.topology.size() && j < d.topology[i].size();
            rows.back().push_back(i == j ? "X" : known ? cell(d.topology[i][j]) : kNotAvailable);
        }
    }
    return render_columns(rows);
}

}  // namespace

std::string render_versions(const Discovery& d) {
    const std::string nvidia = !d.nvidia_driver_version.empty() ? d.nvidia_driver_version
                               : d.driver_found                 ? kNotAvailable
                                                                : "not found";
    const std::string cuda = !d.driver_found ? "not found"
                             : d.driver_version > 0 ? format_cuda_version(d.driver_version)
                                                    : kNotAvailable;
    const auto library = [](const std::optional<int>& v) { return v ? format_library_version(*v) : "not found"; };
    // A build without CUDA still reports the libraries it finds, for a rebuild;
    // say that it does not use them.
    const bool unused = !d.cuda_built && (d.cudnn_version || d.nccl_version);
    return "Versions: NVIDIA driver " + nvidia + ", CUDA " + cuda + ", cuDNN " + library(d.cudnn_version) + ", NCCL " +
           library(d.nccl_version) + (unused ? " (on this machine; this build, without CUDA, uses none of them)" : "") +
           "\n";
}

std::string render_table(const Discovery& d) {
    // Without the CUDA backend the build, not the driver, is why training uses
    // the CPU (as fit says); what the driver said still matters for a rebuild.
    if (d.gpus.empty() && !d.cuda_built)
        return "No GPU: " + kBuiltWithoutCuda + "; training will use the CPU.\n" +
               (d.driver_message.empty() ? "" : "Note: nor is a GPU in sight: " + d.driver_message + "\n") +
               render_versions(d) + render_cpu(d.cpu);
    if (d.gpus.empty()) return no_gpu_line(d, "training will use the CPU.") + render_versions(d) + render_cpu(d.cpu);
    std::string out = render_versions(d) + render_gpus(d);
    if (any_not_available(d)) out += not_available_note(d);
    if (!d.visible_devices_note.empty()) out += "Note: " + d.visible_devices_note + "\n";
    if (!d.cuda_built) out += "Note: " + kBuiltWithoutCuda + "; training will use the CPU, not these GPUs.\n";
    return out + render_cpu(d.cpu);
}

std::string render_topology(const Discovery& d) {
    if (d.gpus.empty()) return no_gpu_line(d, "there is no GPU to show a topology for.");
    std::string out;
    for (const auto& g : d.gpus)
        out += "GPU" + std::to_string(g.index) + ": " + g.name + " (" +
               (g.pci_bus_id.empty() ? kNotAvailable : g.pci_bus_id) + ")\n";
    // Separate appends: GCC 12 warns (-Wrestrict, falsely) on "\n" + std::string.
    out += '\n';
    out += render_matrix(d, "Link", link_cell);
    out += '\n';
    out += render_matrix(d, "Peer access", peer_cell);
    out += "\nLink: NV<n> = n NVLink links; PIX = one PCIe switch; PXB = several PCIe switches; "
           "PHB = a PCIe host bridge; NODE = host bridges of one NUMA node; SYS = across NUMA nodes; BRD = one board.\n"
           "Peer access: CUDA peer-to-peer memory access (cuDeviceCanAccessPeer).\n";
    bool link_unknown = false, peer_unknown = false;
    for (size_t i = 0; i < d.gpus.size(); ++i)
        for (size_t j = 0; j < d.gpus.size(); ++j) {
            if (i == j) continue;
            const bool known = i < d.topology.size() && j < d.topology[i].size();
            link_unknown = link_unknown || !known || link_cell(d.topology[i][j]) == kNotAvailable;
            peer_unknown = peer_unknown || !known || !d.topology[i][j].peer_access;
        }
    if (link_unknown && !d.nvml_message.empty()) out += not_available_note(d);
    else if (link_unknown || peer_unknown) out += "Note: n/a = not readable: the driver does not report it for this pair\n";
    return out;
}

}  // namespace gputrain::device
