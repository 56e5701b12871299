// What the environment says about an MPI launch, read before MPI is touched:
// MPI_Init is only called when a launcher (mpirun/mpiexec, or srun with PMI or
// PMIx) started this process, so a plain `gputrain fit` never needs MPI.
#pragma once

#include <functional>
#include <string>

namespace gputrain::dist {

// getenv, or a fake in tests.
using EnvLookup = std::function<const char*(const char*)>;

// Open MPI sets OMPI_COMM_WORLD_SIZE; MPICH/Hydra and srun --mpi=pmi2 set
// PMI_SIZE; PMIx launchers (srun --mpi=pmix, prterun) set PMIX_RANK.
bool launched_by_mpi(const EnvLookup& env);
bool launched_by_mpi();

// The number of processes the launcher started (1 when the environment does
// not say), for the warning when several processes run a single-process strategy.
int launcher_world_size(const EnvLookup& env);
int launcher_world_size();

// This process's rank as the launcher numbers them (0 when the environment
// does not say): evaluate and predict print results on rank 0 only.
int launcher_rank(const EnvLookup& env);
int launcher_rank();

// A task of a Slurm job step that srun started (SLURM_STEP_NUM_TASKS set):
// the step's tasks and nodes, and this task's rank in it. `tasks` 0: not under srun.
struct SlurmStep {
    int tasks = 0;
    int nodes = 0;
    int task = -1;  // SLURM_PROCID
};
SlurmStep slurm_step(const EnvLookup& env);
SlurmStep slurm_step();

// What keeps a multi_worker_mirrored run from starting as the launcher set it
// up, as an error message ("" when nothing does): srun tasks with no MPI
// plugin (each would train alone), or tasks that do not divide over the
// step's nodes (the workers of one node would get other replica counts).
// Read before MPI is initialized; mpirun inside an allocation sets
// OMPI_COMM_WORLD_SIZE, and then Slurm's task variables describe mpirun's
// daemons, not the workers, so they are not read.
std::string slurm_launch_problem(const EnvLookup& env);

}  // namespace gputrain::dist
