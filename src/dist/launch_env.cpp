#include "dist/launch_env.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

namespace gputrain::dist {

namespace {

const char* system_env(const char* name) { return std::getenv(name); }

// The first of `names` set to a whole number >= `least`, else -1.
int first_number(const EnvLookup& env, std::initializer_list<const char*> names, int least) {
    for (const char* name : names) {
        const char* value = env(name);
        if (!value || !*value) continue;
        // Only a whole number counts ("2abc", "-3", "99999999999" do not): a
        // garbled variable is passed over.
        const char* end = value + std::strlen(value);
        int n = 0;
        const auto [stop, error] = std::from_chars(value, end, n);
        if (error == std::errc() && stop == end && n >= least) return n;
    }
    return -1;
}

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
    // The count only feeds a warning and the rank-0-prints rule.
    const int n = first_number(env, {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}, 1);
    return n < 0 ? 1 : n;
}

int launcher_world_size() { return launcher_world_size(system_env); }

int launcher_rank(const EnvLookup& env) {
    const int rank = first_number(env, {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}, 0);
    return rank < 0 ? 0 : rank;
}

int launcher_rank() { return launcher_rank(system_env); }

SlurmStep slurm_step(const EnvLookup& env) {
    SlurmStep step;
    const int tasks = first_number(env, {"SLURM_STEP_NUM_TASKS"}, 1);
    if (tasks < 1) return step;
    step.tasks = tasks;
    step.nodes = std::max(first_number(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES"}, 1), 1);
    step.task = first_number(env, {"SLURM_PROCID"}, 0);
    return step;
}

SlurmStep slurm_step() { return slurm_step(system_env); }

std::string slurm_launch_problem(const EnvLookup& env) {
    if (set(env, "OMPI_COMM_WORLD_SIZE")) return "";  // mpirun started the workers
    const SlurmStep step = slurm_step(env);
    if (step.tasks <= 1) return "";
    if (!launched_by_mpi(env))
        return "srun started " + std::to_string(step.tasks) + " tasks, but without an MPI plugin (no PMIx or PMI in "
               "their environment), so each would train alone; run srun --mpi=pmix (or set MpiDefault=pmix in "
               "slurm.conf)";
    if (step.tasks % step.nodes != 0)
        return "srun started " + std::to_string(step.tasks) + " tasks on " + std::to_string(step.nodes) +
               " nodes: they do not divide evenly, so the workers of one node would get other replica counts than "
               "another's; give srun --ntasks-per-node (e.g. " + std::to_string(step.tasks / step.nodes + 1) +
               ") or a task count that divides";
    return "";
}

}  // namespace gputrain::dist
