#include "dist/local_communicator.hpp"

#include <algorithm>

namespace gputrain::dist {

LocalGroup::LocalGroup(int size)
    : size_(size), barrier_(size), float_buffers_(size), double_buffers_(size) {}

template <typename T>
void LocalCommunicator::allreduce(T* data, size_t count, std::vector<T*>& buffers, std::vector<T>& sum) {
    LocalGroup& g = *group_;
    if (g.size_ == 1) return;
    if (rank_ == 0 && sum.size() < count) sum.resize(count);
    buffers[rank_] = data;
    g.barrier_.arrive_and_wait();  // every rank's buffer is published and `sum` is large enough
    const size_t begin = count * rank_ / g.size_, end = count * (rank_ + 1) / g.size_;
    for (size_t i = begin; i < end; ++i) {
        T s = buffers[0][i];
        for (int r = 1; r < g.size_; ++r) s += buffers[r][i];
        sum[i] = s;
    }
    g.barrier_.arrive_and_wait();  // every slice is summed
    std::copy(sum.begin(), sum.begin() + static_cast<std::ptrdiff_t>(count), data);
    g.barrier_.arrive_and_wait();  // nobody reuses `sum` before all have copied it out
}

void LocalCommunicator::allreduce_sum(float* data, size_t count) {
    allreduce(data, count, group_->float_buffers_, group_->float_sum_);
}

void LocalCommunicator::allreduce_sum_host(double* data, size_t count) {
    allreduce(data, count, group_->double_buffers_, group_->double_sum_);
}

void LocalCommunicator::barrier() {
    if (group_->size_ > 1) group_->barrier_.arrive_and_wait();
}

std::vector<std::unique_ptr<Communicator>> make_local_communicators(int size) {
    auto group = std::make_shared<LocalGroup>(size);
    std::vector<std::unique_ptr<Communicator>> out;
    for (int r = 0; r < size; ++r) out.push_back(std::make_unique<LocalCommunicator>(group, r));
    return out;
}

}  // namespace gputrain::dist
