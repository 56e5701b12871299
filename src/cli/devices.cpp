// gputrain devices: the GPUs the CUDA driver shows with what NVML says about
// them, or the CPU when there are none; --json for scripts, --topology for
// how the GPUs reach each other.
#include <cstdio>

#include "backend/cpu/conv_description.hpp"
#include "cli/commands.hpp"
#include "device/devices.hpp"
#include "device/render.hpp"

namespace gputrain::cli {

namespace {

struct DevicesOptions {
    bool json = false;
    bool topology = false;
};

int run_devices(const DevicesOptions& options) {
    const device::Discovery d = device::discover(device::Detail::full);
    // The JSON always holds the topology (each GPU's "peers"), so --json wins.
    const std::string text = options.json       ? device::render_json(d)
                             : options.topology ? device::render_topology(d)
                                                : device::render_table(d);
    std::fputs(text.c_str(), stdout);
    if (!options.json && !options.topology) {
        std::printf("CPU convolutions: %s\n", cpu_conv_description().c_str());
        std::printf("CPU GEMMs: %s\n", cpu_gemm_description().c_str());
    }
    return 0;
}

}  // namespace

Action add_devices_command(CLI::App& app) {
    auto options = std::make_shared<DevicesOptions>();
    CLI::App* cmd = app.add_subcommand(
        "devices", "List the GPUs training can use, with memory use, utilization, temperature, power and the "
                   "driver and library versions (or the CPU when there is no GPU)");
    cmd->add_flag("--json", options->json, "Print one JSON object instead of a table (it includes the topology)");
    cmd->add_flag("--topology", options->topology,
                  "Print how the GPUs reach each other: NVLink or PCIe path, and CUDA peer access");
    return [options] { return run_devices(*options); };
}

}  // namespace gputrain::cli
