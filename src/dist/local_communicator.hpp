// LocalCommunicator: ranks are threads of one process on host memory (the CPU
// backend). The all-reduce sums every element over ranks 0..N-1 in rank order,
// so all ranks get bit-identical results whatever the thread timing; each rank
// sums one slice, as a reduce-scatter + all-gather would.
//
// The asynchronous all-reduce is a real overlap: each rank posts its buffer
// and goes on; the LAST rank to post a bucket sums it (same rank order, so
// the same bits as allreduce_sum) and writes the sum into every rank's
// buffer, while the others keep computing; allreduce_wait only waits for that.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "dist/abortable_barrier.hpp"
#include "dist/communicator.hpp"

namespace gputrain::dist {

class LocalGroup {
public:
    explicit LocalGroup(int size);
    int size() const { return size_; }

private:
    friend class LocalCommunicator;
    int size_;
    AbortableBarrier barrier_;
    std::vector<float*> float_buffers_;
    std::vector<double*> double_buffers_;
    std::vector<float> float_sum_;
    std::vector<double> double_sum_;

    // Asynchronous all-reduces in flight, by the sequence number every rank
    // gives its n-th start (ranks start the same ones in the same order).
    struct InFlight {
        std::vector<float*> buffers;  // by rank
        size_t count = 0;
        int arrived = 0;
        int waited = 0;
        bool done = false;
    };
    std::mutex async_mutex_;
    std::condition_variable async_changed_;
    std::map<uint64_t, InFlight> in_flight_;
    bool async_aborted_ = false;
};

class LocalCommunicator : public Communicator {
public:
    LocalCommunicator(std::shared_ptr<LocalGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return group_->size(); }
    void allreduce_sum(float* data, size_t count) override;
    PendingAllreduce allreduce_sum_start(float* data, size_t count) override;
    void allreduce_wait(PendingAllreduce pending) override;
    void allreduce_sum_host(double* data, size_t count) override;
    void barrier() override;
    void abort() override;

private:
    template <typename T>
    void allreduce(T* data, size_t count, std::vector<T*>& buffers, std::vector<T>& sum);

    std::shared_ptr<LocalGroup> group_;
    int rank_;
    uint64_t next_async_ = 0;  // this rank's count of started asynchronous all-reduces
};

// N communicators sharing one group, rank i at index i.
std::vector<std::unique_ptr<Communicator>> make_local_communicators(int size);

}  // namespace gputrain::dist
