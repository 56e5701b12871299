// Communicator: one rank's handle on the group of replicas. Collectives must
// be called by every rank, in the same order, the same number of times (a
// rank with nothing to add still joins): that is what keeps NCCL from hanging.
// That holds for the asynchronous all-reduce too: every rank starts the same
// buckets in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/error.hpp"

namespace gputrain::dist {

// A collective that did not complete within strategy.timeout_seconds (the
// GPU communicators across workers); the stall watchdog adds what it last
// saw of the other workers.
class CollectiveTimeout : public Error {
public:
    using Error::Error;
};

// An all-reduce in flight (allreduce_sum_start); pass it to allreduce_wait once.
struct PendingAllreduce {
    uint64_t id = 0;
};

class Communicator {
public:
    virtual ~Communicator() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // In place, on the rank's backend memory: every rank ends with the sum.
    virtual void allreduce_sum(float* data, size_t count) = 0;
    // The same, started now and finished by allreduce_wait, so that the rank
    // can go on computing (the rest of backward) meanwhile. Until the wait
    // returns, [data, data + count) must be neither read nor written. The
    // result is bit-identical to allreduce_sum's. Up to 256 may be in flight per
    // rank, waited for in the order they were started (GradientBuckets does
    // both); other collectives may be called between start and wait. This default is
    // the synchronous fallback: the whole all-reduce runs in start.
    virtual PendingAllreduce allreduce_sum_start(float* data, size_t count) {
        allreduce_sum(data, count);
        return {};
    }
    // Returns once the sum may be used: on the host for host memory; in
    // stream order (later work on the rank's stream sees it) for a GPU.
    virtual void allreduce_wait(PendingAllreduce) {}
    // allreduce_wait, plus whether every element of the sum is finite where
    // the communicator found that out while summing (LocalCommunicator with
    // several ranks); std::nullopt where it did not, and the caller must look.
    virtual std::optional<bool> allreduce_wait_finite(PendingAllreduce pending) {
        allreduce_wait(pending);
        return std::nullopt;
    }
    // The same on host doubles (metrics).
    virtual void allreduce_sum_host(double* data, size_t count) = 0;
    virtual void barrier() = 0;
    // Called from any thread when some rank failed: ranks waiting in (or later
    // entering) a collective throw instead of waiting forever.
    virtual void abort() = 0;
};

}  // namespace gputrain::dist
