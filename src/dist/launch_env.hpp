// What the environment says about an MPI launch, read before MPI is touched:
// MPI_Init is only called when a launcher (mpirun/mpiexec, or srun with PMI or
// PMIx) started this process, so a plain `gputrain fit` never needs MPI.
#pragma once

#include <functional>

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

}  // namespace gputrain::dist
