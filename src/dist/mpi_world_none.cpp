// Builds without MPI: multi_worker_mirrored runs as one process only.
#include "core/error.hpp"
#include "dist/mpi_world.hpp"

namespace gputrain::dist {

bool mpi_built() { return false; }

std::unique_ptr<World> join_mpi_world(double, double) {
    throw ConfigError("strategy.type: multi_worker_mirrored was launched by an MPI launcher, but this gputrain was "
                      "built without MPI; install Open MPI (apt-get install libopenmpi-dev) and rebuild with "
                      "meson -Dmpi=enabled, or run one process without mpirun");
}

}  // namespace gputrain::dist
