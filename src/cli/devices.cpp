// gputrain devices: the GPUs the CUDA driver shows, or the CPU when there are none.
#include <cstdio>

#include "cli/commands.hpp"
#include "device/devices.hpp"

namespace gputrain::cli {

namespace {

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

int run_devices(bool json) {
    const device::Discovery d = device::discover();
    if (json) {
        std::printf("{\"driver_found\": %s, \"driver_version\": %d, \"message\": \"%s\", \"gpus\": [",
                    d.driver_found ? "true" : "false", d.driver_version, json_escape(d.driver_message).c_str());
        for (size_t i = 0; i < d.gpus.size(); ++i) {
            const auto& g = d.gpus[i];
            std::printf("%s{\"index\": %d, \"name\": \"%s\", \"memory_bytes\": %llu, \"compute_capability\": \"%d.%d\", "
                        "\"multiprocessors\": %d}",
                        i ? ", " : "", g.index, json_escape(g.name).c_str(), (unsigned long long)g.memory_bytes,
                        g.compute_major, g.compute_minor, g.multiprocessors);
        }
        std::printf("], \"cpu\": {\"model\": \"%s\", \"cores\": %d, \"memory_bytes\": %llu}, \"training_device\": \"%s\"}\n",
                    json_escape(d.cpu.model).c_str(), d.cpu.logical_cores, (unsigned long long)d.cpu.memory_bytes,
                    d.gpus.empty() ? "cpu" : "gpu");
        return 0;
    }
    if (d.gpus.empty()) {
        std::printf("No GPU: %s; training will use the CPU.\n", d.driver_message.c_str());
    } else {
        std::printf("CUDA driver %d.%d, %zu GPU%s\n", d.driver_version / 1000, d.driver_version % 1000 / 10,
                    d.gpus.size(), d.gpus.size() == 1 ? "" : "s");
        std::printf("%-4s %-32s %12s %8s %5s\n", "GPU", "Name", "Memory", "Compute", "SMs");
        for (const auto& g : d.gpus)
            std::printf("%-4d %-32s %12s %6d.%d %5d\n", g.index, g.name.c_str(),
                        device::format_bytes(g.memory_bytes).c_str(), g.compute_major, g.compute_minor,
                        g.multiprocessors);
    }
    std::printf("%-4s %-32s %12s %8s\n", "CPU", "Model", "Memory", "Cores");
    std::printf("%-4s %-32s %12s %8d\n", "0", d.cpu.model.c_str(), device::format_bytes(d.cpu.memory_bytes).c_str(),
                d.cpu.logical_cores);
    return 0;
}

}  // namespace

Action add_devices_command(CLI::App& app) {
    auto json = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("devices", "List the GPUs training can use (or the CPU when there is none)");
    cmd->add_flag("--json", *json, "Print one JSON object instead of a table");
    return [json] { return run_devices(*json); };
}

}  // namespace gputrain::cli
