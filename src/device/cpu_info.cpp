#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <utility>
#include <string>
#include <thread>

#include "core/host_memory.hpp"
#include "device/devices.hpp"

namespace gputrain::device {

CpuInfo cpu_info() {
    CpuInfo info;
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) info.model = line.substr(line.find_first_not_of(" \t", colon + 1));
            break;
        }
    }
    if (info.model.empty()) info.model = "unknown CPU";
    cpu_set_t set;
    info.logical_cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                                    : static_cast<int>(std::thread::hardware_concurrency());
    // Cores, not hardware threads: (package, core) pairs of the CPUs this process may use.
    info.physical_cores = info.logical_cores;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        std::set<std::pair<int, int>> cores;
        bool known = true;
        for (int cpu = 0; cpu < CPU_SETSIZE && known; ++cpu) {
            if (!CPU_ISSET(cpu, &set)) continue;
            const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
            int core = -1, package = -1;
            std::ifstream(dir + "core_id") >> core;
            std::ifstream(dir + "physical_package_id") >> package;
            known = core >= 0 && package >= 0;
            cores.emplace(package, core);
        }
        if (known && !cores.empty()) info.physical_cores = static_cast<int>(cores.size());
    }
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page_size > 0) info.memory_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
    return info;
}

std::string format_bytes(uint64_t bytes) { return human_bytes(static_cast<size_t>(bytes), /*one_decimal=*/true); }

}  // namespace gputrain::device
