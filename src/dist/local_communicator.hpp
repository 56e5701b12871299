// LocalCommunicator: ranks are threads of one process on host memory (the CPU
// backend). The all-reduce sums every element over ranks 0..N-1 in rank order,
// so all ranks get bit-identical results whatever the thread timing; each rank
// sums one slice, as a reduce-scatter + all-gather would.
//
// The asynchronous all-reduce is a real overlap: each rank posts its buffer
// and goes on; the LAST rank to post a bucket starts summing it (same rank
// order, so the same bits as allreduce_sum) and writes the sum into every
// rank's buffer, while the others keep computing. The bucket is cut into
// chunks that any rank inside allreduce_wait claims too, so ranks that have
// nothing else to do share the work instead of watching one rank do it.
// Posting, claiming and finishing are lock-free; waits spin briefly, then
// sleep (spin_wait.hpp).
//
// The stall warning: a rank that has waited stall_warning_seconds in a
// collective logs which collective, the step (stall_watch.hpp) and which
// ranks have arrived and which have not, and again every interval while it
// waits; it never gives up (a failing replica aborts the group instead). Each
// rank publishes how far it has got (a relaxed store to a cache line of its
// own per collective), read only by a rank that reports a stall.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "dist/abortable_barrier.hpp"
#include "dist/communicator.hpp"
#include "dist/spin_wait.hpp"

namespace gputrain::dist {

class LocalGroup {
public:
    // stall_warning_seconds: how long a rank waits in a collective before it
    // says so (and again every as many seconds); 0: never.
    explicit LocalGroup(int size, double stall_warning_seconds = 0);
    int size() const { return size_; }

private:
    friend class LocalCommunicator;
    int size_;
    double stall_warning_seconds_;
    // How far each rank has got, by rank, for the stall warning: counts that
    // only its rank writes, on a cache line of its own.
    struct alignas(64) Progress {
        std::atomic<uint64_t> rounds{0};      // barrier rounds entered
        std::atomic<uint64_t> posted{0};      // asynchronous all-reduces whose buffer it has posted
        std::atomic<uint64_t> released{0};    // asynchronous all-reduces it has finished waiting for
    };
    std::unique_ptr<Progress[]> progress_;
    AbortableBarrier barrier_;
    std::vector<float*> float_buffers_;
    std::vector<double*> double_buffers_;
    std::vector<float> float_sum_;
    std::vector<double> double_sum_;

    // Asynchronous all-reduces in flight. Every rank numbers its starts 0, 1,
    // 2, ... (ranks start the same ones in the same order); all-reduce `id`
    // uses slot id % kSlots, which it may take once every rank has waited
    // for all-reduce id - kSlots.
    static constexpr uint64_t kSlots = 256;
    static constexpr size_t kChunkFloats = 8192;  // 32 KiB: the unit of shared summing work
    struct Slot {
        std::atomic<uint64_t> serves{0};        // the all-reduce id this slot is for now
        std::atomic<uint32_t> arrived{0};       // ranks that have posted their buffer
        std::atomic<uint32_t> ready{0};         // 1 once all have: chunks may be claimed
        std::atomic<uint32_t> next_chunk{0};    // the next chunk to claim
        std::atomic<uint32_t> chunks_done{0};   // chunks summed and written to every buffer
        std::atomic<uint32_t> released{0};      // ranks that have returned from allreduce_wait
        std::atomic<uint32_t> nonfinite{0};     // 1 once a chunk's sum held a NaN or an infinity
        std::vector<float*> buffers;            // by rank
        std::vector<size_t> counts;             // by rank (must agree)
        size_t count = 0;                       // set by the last to post, before `ready`
        uint32_t chunks = 0;
    };
    std::unique_ptr<Slot[]> slots_;
    ChangeCounter async_changes_;  // bumped whenever a waiter's condition may have become true
    std::atomic<bool> async_aborted_{false};
    bool spin_;
};

class LocalCommunicator : public Communicator {
public:
    LocalCommunicator(std::shared_ptr<LocalGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return group_->size(); }
    void allreduce_sum(float* data, size_t count) override;
    PendingAllreduce allreduce_sum_start(float* data, size_t count) override;
    void allreduce_wait(PendingAllreduce pending) override { allreduce_wait_finite(pending); }
    std::optional<bool> allreduce_wait_finite(PendingAllreduce pending) override;
    void allreduce_sum_host(double* data, size_t count) override;
    void barrier() override;
    void abort() override;

private:
    template <typename T>
    void allreduce(T* data, size_t count, std::vector<T*>& buffers, std::vector<T>& sum, const char* what);
    // One round of the group's barrier, inside the collective `what`.
    void meet(const char* what);
    // Waits until done(), watched: what() names the collective and
    // arrived(rank) says who has reached it, for the warning only.
    template <typename Done, typename What, typename Arrived>
    void wait_watched(Done done, What what, Arrived arrived);
    // The stall warning's line.
    template <typename Arrived>
    void warn_stall(double waited, const std::string& what, Arrived arrived) const;

    std::shared_ptr<LocalGroup> group_;
    int rank_;
    // Sums chunks of `slot` until none is left to claim.
    static void sum_chunks(LocalGroup::Slot& slot, int ranks, ChangeCounter& changes);

    uint64_t next_async_ = 0;   // this rank's count of started asynchronous all-reduces
    uint64_t next_wait_ = 0;    // ... and of those it has waited for (in start order)
    uint64_t rounds_ = 0;       // ... and of the barrier rounds it has entered
};

// N communicators sharing one group, rank i at index i. stall_warning_seconds:
// see LocalGroup (strategy.stall_warning_seconds; 0: never).
std::vector<std::unique_ptr<Communicator>> make_local_communicators(int size, double stall_warning_seconds = 0);

}  // namespace gputrain::dist
