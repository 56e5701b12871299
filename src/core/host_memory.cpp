#include "core/host_memory.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>

#include "core/error.hpp"

namespace gputrain {

namespace {

// A number from a cgroup file ("max", or unreadable: none).
bool read_bytes(const std::string& path, size_t& out) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
    out = std::stoull(text);
    return true;
}

// A key's value in a cgroup's memory.stat, 0 when absent.
size_t stat_value(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string name;
    size_t value = 0;
    while (in >> name >> value)
        if (name == key) return value;
    return 0;
}

// What the memory cgroup of this process, and each one above it, still lets
// it take (the least of limit - working set, where the working set is the
// usage less the inactive page cache the kernel reclaims first, as container
// runtimes count it): a container's or a job's limit, which /proc/meminfo
// does not show. SIZE_MAX when no limit is found.
size_t cgroup_headroom() {
    std::ifstream self("/proc/self/cgroup");
    std::string line, v2, v1;
    while (std::getline(self, line)) {
        if (line.rfind("0::", 0) == 0) v2 = line.substr(3);
        const auto at = line.find(":memory:");
        if (at != std::string::npos) v1 = line.substr(at + 8);
    }
    size_t headroom = SIZE_MAX;
    const auto walk = [&](std::string dir, const char* limit_file, const char* usage_file, const char* inactive) {
        for (;;) {
            size_t limit = 0, usage = 0;
            if (read_bytes(dir + "/" + limit_file, limit) && read_bytes(dir + "/" + usage_file, usage)) {
                const size_t cache = std::min(usage, stat_value(dir + "/memory.stat", inactive));
                const size_t working = usage - cache;
                headroom = std::min(headroom, limit > working ? limit - working : 0);
            }
            const auto slash = dir.find_last_of('/');
            if (slash == std::string::npos || dir.size() <= std::string("/sys/fs/cgroup").size()) return;
            dir.resize(slash);
        }
    };
    if (!v2.empty())
        walk("/sys/fs/cgroup" + (v2 == "/" ? std::string() : v2), "memory.max", "memory.current", "inactive_file");
    if (!v1.empty())
        walk("/sys/fs/cgroup/memory" + (v1 == "/" ? std::string() : v1), "memory.limit_in_bytes",
             "memory.usage_in_bytes", "total_inactive_file");
    return headroom;
}

// What `ulimit -v` (RLIMIT_AS) still lets this process map: the limit less
// its address space now (VmSize). SIZE_MAX without a limit.
size_t address_space_headroom() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
    std::ifstream status("/proc/self/status");
    std::string key;
    size_t kib = 0;
    std::string unit;
    while (status >> key) {
        if (key == "VmSize:" && status >> kib) {
            const size_t used = kib * 1024;
            return limit.rlim_cur > used ? static_cast<size_t>(limit.rlim_cur) - used : 0;
        }
        std::getline(status, unit);
    }
    return SIZE_MAX;
}

}  // namespace

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
    if (!found) return 0;
    const size_t limit = std::min(cgroup_headroom(), address_space_headroom());  // 1 at least: 0 reads as "unknown"

    return limit == SIZE_MAX ? total : std::max<size_t>(std::min(total, limit), 1);
}

void require_host_memory(size_t bytes, const std::string& what, const std::string& hint) {
    const size_t available = host_memory_available();
    if (available == 0 || bytes <= available) return;
    throw Error(what + " take " + human_bytes(bytes) + ", but " + human_bytes(available) +
                " is available (MemAvailable + SwapFree, within any cgroup or ulimit -v limit); " + hint);
}

std::string human_bytes(size_t bytes, bool one_decimal) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 6) {
        value /= 1024.0;
        ++unit;
    }
    char buf[32];
    if (unit == 0)
        std::snprintf(buf, sizeof buf, "%zu B", bytes);
    else
        std::snprintf(buf, sizeof buf, value < 10 && !one_decimal ? "%.2f %s" : "%.1f %s", value, units[unit]);
    return buf;
}

}  // namespace gputrain
