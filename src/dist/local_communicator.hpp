// LocalCommunicator: ranks are threads of one process on host memory (the CPU
// backend). The all-reduce sums every element over ranks 0..N-1 in rank order,
// so all ranks get bit-identical results whatever the thread timing; each rank
// sums one slice, as a reduce-scatter + all-gather would.
#pragma once

#include <memory>
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
};

class LocalCommunicator : public Communicator {
public:
    LocalCommunicator(std::shared_ptr<LocalGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return group_->size(); }
    void allreduce_sum(float* data, size_t count) override;
    void allreduce_sum_host(double* data, size_t count) override;
    void barrier() override;
    void abort() override { group_->barrier_.abort(); }

private:
    template <typename T>
    void allreduce(T* data, size_t count, std::vector<T*>& buffers, std::vector<T>& sum);

    std::shared_ptr<LocalGroup> group_;
    int rank_;
};

// N communicators sharing one group, rank i at index i.
std::vector<std::unique_ptr<Communicator>> make_local_communicators(int size);

}  // namespace gputrain::dist
