#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
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
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page_size > 0) info.memory_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
    return info;
}

std::string format_bytes(uint64_t bytes) { return human_bytes(static_cast<size_t>(bytes), /*one_decimal=*/true); }

}  // namespace gputrain::device
