// ProcessGroup: the processes of a multi-worker run (one per host or per GPU),
// as seen by ONE thread of each process: the thread of its first replica.
// Every process calls the collectives in the same order. A collective that
// gets no answer within timeout_seconds() throws instead of waiting forever,
// and cancel() (from any thread) makes a waiting or later collective throw:
// a dead or hung worker must never leave the others hanging.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "dist/peer_channel.hpp"

namespace gputrain::dist {

// A config error that every worker of the job raises at the same point, from
// the same collective verdict: no worker is left waiting for another, so each
// ends normally (prints its error, finalizes MPI, exits 2) instead of aborting
// the job. Concurrent MPI_Abort calls from every rank can crash Open MPI 4.1's
// mpirun (seen in its PMIx log handler), turning exit 2 into a segfault.
class WorkersDisagree : public ConfigError {
public:
    using ConfigError::ConfigError;
};

class ProcessGroup {
public:
    virtual ~ProcessGroup() = default;
    virtual int rank() const = 0;        // 0..size()-1
    virtual int size() const = 0;
    virtual int local_rank() const = 0;  // among the processes on this machine
    virtual int local_size() const = 0;
    virtual double timeout_seconds() const = 0;
    // In place on host memory: every process ends with the sum over processes.
    virtual void allreduce_sum(float* data, size_t count) = 0;
    virtual void allreduce_sum(double* data, size_t count) = 0;
    // `bytes` at `data` of process `root` are copied to every process.
    virtual void broadcast(void* data, size_t bytes, int root) = 0;
    virtual void cancel() = 0;
    // The stall watchdog's channel to the other processes (peer_channel.hpp),
    // for collectives that do not pass through this group; null when it has none.
    virtual std::unique_ptr<PeerChannel> peer_channel() { return nullptr; }
};

// Global replica ranks are process rank * local replicas + local rank, so every
// process must run the same number of replicas. A collective: throws
// ConfigError in the processes whose count differs from the others'.
void require_same_replica_count(ProcessGroup& processes, int local_replicas);

// Every worker must train the same config: `fingerprint` of each (a hash of
// what must agree, cli/workers.cpp) is compared with worker 0's. A
// collective: when any differs, every worker throws WorkersDisagree (the ones
// that differ name themselves), so none waits for the others in a collective
// that would never match.
void require_same_config(ProcessGroup& processes, const std::string& fingerprint);

// What require_same says when workers differ: "<prefix>worker 1 <one> than
// worker 0 (fingerprint ...); <remedy>" on the workers that differ, "<prefix>2
// of 3 workers <many> than worker 0; <remedy>" on the others.
struct Disagreement {
    std::string prefix;  // "strategy: ", "evaluate: "
    std::string one;     // "trains another config"
    std::string many;    // "train another config"
    std::string remedy;
};

// The collective behind require_same_config: `fingerprint` (up to 127 bytes)
// of every worker compared with worker 0's; WorkersDisagree on every worker
// when any differs.
void require_same(ProcessGroup& processes, const std::string& fingerprint, const Disagreement& says);

}  // namespace gputrain::dist
