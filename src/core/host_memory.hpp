// How much memory this machine can still give, for the checks made before
// large host buffers are filled: Linux lets an allocation succeed and then
// ends the process by the OOM killer, without a word, once the pages are
// touched.
#pragma once

#include <cstddef>
#include <string>

namespace gputrain {

// MemAvailable + SwapFree of /proc/meminfo, or less when a memory cgroup
// (a container's or a batch job's limit, v1 or v2) or `ulimit -v` leaves
// less; 0 when /proc/meminfo cannot be read.
size_t host_memory_available();

// Throws Error "WHAT take N, but M is available (MemAvailable + SwapFree, within any cgroup or ulimit -v limit); HINT"
// when `bytes` is more than host_memory_available() (nothing when unknown).
void require_host_memory(size_t bytes, const std::string& what, const std::string& hint);

// "397.5 KiB", "1.20 GiB", "512 B" (`one_decimal`: "1.2 GiB", as the
// nvidia-smi-like device table prints memory).
std::string human_bytes(size_t bytes, bool one_decimal = false);

}  // namespace gputrain
