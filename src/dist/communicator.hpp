// Communicator: one rank's handle on the group of replicas. Collectives must
// be called by every rank, in the same order, the same number of times (a
// rank with nothing to add still joins): that is what keeps NCCL from hanging.
#pragma once

#include <cstddef>

namespace gputrain::dist {

class Communicator {
public:
    virtual ~Communicator() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // In place, on the rank's backend memory: every rank ends with the sum.
    virtual void allreduce_sum(float* data, size_t count) = 0;
    // The same on host doubles (metrics).
    virtual void allreduce_sum_host(double* data, size_t count) = 0;
    virtual void barrier() = 0;
    // Called from any thread when some rank failed: ranks waiting in (or later
    // entering) a collective throw instead of waiting forever.
    virtual void abort() = 0;
};

}  // namespace gputrain::dist
