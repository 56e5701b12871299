#include "dist/launch_env.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gputrain::dist {

namespace {

const char* system_env(const char* name) { return std::getenv(name); }

bool set(const EnvLookup& env, const char* name) {
    const char* value = env(name);
    return value && *value;
}

}  // namespace

bool launched_by_mpi(const EnvLookup& env) {
    return set(env, "OMPI_COMM_WORLD_SIZE") || set(env, "PMI_SIZE") || set(env, "PMIX_RANK");
}

bool launched_by_mpi() { return launched_by_mpi(system_env); }

int launcher_world_size(const EnvLookup& env) {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
        const char* value = env(name);
        if (!value || !*value) continue;
        // Only a whole positive number counts ("2abc", "-3", "99999999999" do not):
        // the count only feeds a warning, so a garbled variable is passed over.
        const char* end = value + std::strlen(value);
        int n = 0;
        const auto [stop, error] = std::from_chars(value, end, n);
        if (error == std::errc() && stop == end && n >= 1) return n;
    }
    return 1;
}

int launcher_world_size() { return launcher_world_size(system_env); }

}  // namespace gputrain::dist
