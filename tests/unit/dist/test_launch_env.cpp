// Whether an MPI launcher started the process, from its environment alone.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "dist/launch_env.hpp"

using namespace gputrain;

namespace {

dist::EnvLookup env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    };
}

}  // namespace

TEST_CASE("An MPI launch is recognized from Open MPI, PMI and PMIx variables only") {
    REQUIRE_FALSE(dist::launched_by_mpi(env_of({})));
    REQUIRE_FALSE(dist::launched_by_mpi(env_of({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "1"}})));
    REQUIRE_FALSE(dist::launched_by_mpi(env_of({{"OMPI_COMM_WORLD_SIZE", ""}})));
    REQUIRE(dist::launched_by_mpi(env_of({{"OMPI_COMM_WORLD_SIZE", "2"}})));
    REQUIRE(dist::launched_by_mpi(env_of({{"PMI_SIZE", "2"}})));
    REQUIRE(dist::launched_by_mpi(env_of({{"PMIX_RANK", "0"}})));
}

TEST_CASE("The launcher's process count, 1 when unknown") {
    REQUIRE(dist::launcher_world_size(env_of({})) == 1);
    REQUIRE(dist::launcher_world_size(env_of({{"OMPI_COMM_WORLD_SIZE", "4"}})) == 4);
    REQUIRE(dist::launcher_world_size(env_of({{"PMI_SIZE", "3"}})) == 3);
    REQUIRE(dist::launcher_world_size(env_of({{"SLURM_NTASKS", "8"}})) == 8);
    REQUIRE(dist::launcher_world_size(env_of({{"OMPI_COMM_WORLD_SIZE", "x"}, {"SLURM_NTASKS", "2"}})) == 2);
    // Garbled values are passed over, not half-read: "2abc" is not 2, "-3" and "0" are no count.
    REQUIRE(dist::launcher_world_size(env_of({{"OMPI_COMM_WORLD_SIZE", "2abc"}})) == 1);
    REQUIRE(dist::launcher_world_size(env_of({{"OMPI_COMM_WORLD_SIZE", "-3"}, {"SLURM_NTASKS", "2"}})) == 2);
    REQUIRE(dist::launcher_world_size(env_of({{"PMI_SIZE", "0"}})) == 1);
    REQUIRE(dist::launcher_world_size(env_of({{"PMI_SIZE", "99999999999999999999"}})) == 1);
}

TEST_CASE("The launcher's rank for this process, 0 when unknown") {
    REQUIRE(dist::launcher_rank(env_of({})) == 0);
    REQUIRE(dist::launcher_rank(env_of({{"OMPI_COMM_WORLD_RANK", "1"}})) == 1);
    REQUIRE(dist::launcher_rank(env_of({{"PMI_RANK", "3"}})) == 3);
    REQUIRE(dist::launcher_rank(env_of({{"PMIX_RANK", "2"}})) == 2);
    REQUIRE(dist::launcher_rank(env_of({{"SLURM_PROCID", "5"}})) == 5);
    // Open MPI's own variable wins over what srun set around it.
    REQUIRE(dist::launcher_rank(env_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"SLURM_PROCID", "1"}})) == 0);
    REQUIRE(dist::launcher_rank(env_of({{"OMPI_COMM_WORLD_RANK", "1x"}, {"PMI_RANK", "-1"}})) == 0);
}

TEST_CASE("Slurm: a step's tasks without an MPI plugin, or not dividing over its nodes, cannot run multi_worker_mirrored") {
    REQUIRE(dist::slurm_step(env_of({})).tasks == 0);
    const auto step = dist::slurm_step(env_of({{"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_STEP_NUM_NODES", "2"},
                                               {"SLURM_PROCID", "3"}}));
    REQUIRE(step.tasks == 4);
    REQUIRE(step.nodes == 2);
    REQUIRE(step.task == 3);
    // Not under srun, one task, or under mpirun (Slurm's variables describe its daemons): nothing to say.
    REQUIRE(dist::slurm_launch_problem(env_of({})).empty());
    REQUIRE(dist::slurm_launch_problem(env_of({{"SLURM_STEP_NUM_TASKS", "1"}})).empty());
    REQUIRE(dist::slurm_launch_problem(env_of({{"SLURM_STEP_NUM_TASKS", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}})).empty());
    REQUIRE(dist::slurm_launch_problem(env_of({{"SLURM_STEP_NUM_TASKS", "2"}, {"PMIX_RANK", "0"}})).empty());
    REQUIRE(dist::slurm_launch_problem(env_of({{"SLURM_STEP_NUM_TASKS", "2"}})) ==
            "srun started 2 tasks, but without an MPI plugin (no PMIx or PMI in their environment), so each would "
            "train alone; run srun --mpi=pmix (or set MpiDefault=pmix in slurm.conf)");
    REQUIRE(dist::slurm_launch_problem(
                env_of({{"SLURM_STEP_NUM_TASKS", "3"}, {"SLURM_STEP_NUM_NODES", "2"}, {"PMI_SIZE", "3"}})) ==
            "srun started 3 tasks on 2 nodes: they do not divide evenly, so the workers of one node would get other "
            "replica counts than another's; give srun --ntasks-per-node (e.g. 2) or a task count that divides");
    REQUIRE(dist::slurm_launch_problem(
                env_of({{"SLURM_STEP_NUM_TASKS", "16"}, {"SLURM_STEP_NUM_NODES", "2"}, {"PMIX_RANK", "5"}})).empty());
}
