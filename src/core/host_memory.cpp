#include "core/host_memory.hpp"

#include <cstdio>
#include <fstream>

#include "core/error.hpp"

namespace gputrain {

size_t host_memory_available() {
    std::ifstream meminfo("/proc/meminfo");
    std::string key, unit;
    size_t kib = 0, total = 0;
    bool found = false;
    while (meminfo >> key >> kib) {
        std::getline(meminfo, unit);
        if (key == "MemAvailable:" || key == "SwapFree:") {
            total += kib * 1024;
            found = found || key == "MemAvailable:";
        }
    }
    return found ? total : 0;
}

void require_host_memory(size_t bytes, const std::string& what, const std::string& hint) {
    const size_t available = host_memory_available();
    if (available == 0 || bytes <= available) return;
    throw Error(what + " take " + human_bytes(bytes) + ", but " + human_bytes(available) +
                " is available (MemAvailable + SwapFree); " + hint);
}

std::string human_bytes(size_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        ++unit;
    }
    char buf[32];
    if (unit == 0)
        std::snprintf(buf, sizeof buf, "%zu B", bytes);
    else
        std::snprintf(buf, sizeof buf, value < 10 ? "%.2f %s" : "%.1f %s", value, units[unit]);
    return buf;
}

}  // namespace gputrain
