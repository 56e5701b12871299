// The worker processes of a multi_worker_mirrored run, as the command line
// sees them: joining the MPI job when a launcher started this process, the
// "[rank N] " prefix on other workers' log lines, and ending the whole job
// when this worker fails so that no other worker waits for it.
#pragma once

#include <functional>
#include <memory>

#include "config/run_config.hpp"
#include "dist/mpi_world.hpp"

namespace gputrain::cli {

// The MPI job this process belongs to, or null: not multi_worker_mirrored, or
// no MPI launcher in the environment (one process: exactly mirrored). On
// workers other than rank 0 the log shows only warnings and errors, prefixed
// "[rank N] ". Warns when a launcher started several processes for a
// single-process strategy (each would train alone).
std::unique_ptr<dist::World> join_workers(const config::RunConfig& cfg);

// Runs `body`. When it throws in a job of several workers, prints
// "[rank N] gputrain: error: ..." and ends every worker with the error's exit
// code (MPI_Abort); otherwise the error propagates as usual. A
// dist::WorkersDisagree, which every worker raises at once, propagates too
// (main prints it with the worker's "[rank N] "), so that every worker ends
// normally. A stop by a signal
// (train::Interrupted, which every worker raises after the same step) is not a
// failure: the workers meet in a barrier, rank 0 rethrows it (reported like a
// single process's stop) and the others return its exit code (128 + signal),
// so that every worker finalizes MPI and exits cleanly.
int run_as_worker(dist::World* world, const std::function<int()>& body);

}  // namespace gputrain::cli
