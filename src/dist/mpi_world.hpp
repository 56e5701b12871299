// MpiWorld: this process's place in an MPI job, from MPI_Init_thread to
// MPI_Finalize (the destructor). The build compiles mpi_world.cpp with MPI or
// mpi_world_none.cpp without it; nothing else in gputrain includes mpi.h.
#pragma once

#include <memory>

#include "dist/process_group.hpp"

namespace gputrain::dist {

class World : public ProcessGroup {
public:
    // Ends every process of the job with `exit_code` (MPI_Abort): what a worker
    // does after reporting its error, so that no other worker waits for it.
    [[noreturn]] virtual void abort_job(int exit_code) = 0;
};

// Whether this binary was built with MPI.
bool mpi_built();

// Joins the job the launcher started (call once per process, from the thread
// that will call the collectives). Collectives give up after timeout_seconds;
// one that has waited stall_warning_seconds (0: never) logs which workers have
// and have not arrived, and again every as many seconds (the stall watchdog).
// Throws ConfigError in builds without MPI.
std::unique_ptr<World> join_mpi_world(double timeout_seconds, double stall_warning_seconds = 0);

}  // namespace gputrain::dist
