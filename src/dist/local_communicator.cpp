#include "dist/local_communicator.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

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

PendingAllreduce LocalCommunicator::allreduce_sum_start(float* data, size_t count) {
    LocalGroup& g = *group_;
    const PendingAllreduce pending{next_async_++};
    if (g.size_ == 1) return pending;
    std::vector<float*> buffers;
    {
        std::lock_guard<std::mutex> lock(g.async_mutex_);
        if (g.async_aborted_) throw Error("stopped because another replica failed");
        LocalGroup::InFlight& op = g.in_flight_[pending.id];
        if (op.arrived == 0) {
            op.buffers.assign(static_cast<size_t>(g.size_), nullptr);
            op.count = count;
        } else if (op.count != count) {
            throw Error("internal: replica " + std::to_string(rank_) + " started an all-reduce of " +
                        std::to_string(count) + " floats where another started " + std::to_string(op.count));
        }
        op.buffers[static_cast<size_t>(rank_)] = data;
        if (++op.arrived < g.size_) return pending;
        buffers = op.buffers;  // the last to arrive sums; the others are computing on
    }
    const int n = g.size_;
    for (size_t i = 0; i < count; ++i) {
        float s = buffers[0][i];
        for (int r = 1; r < n; ++r) s += buffers[static_cast<size_t>(r)][i];
        for (int r = 0; r < n; ++r) buffers[static_cast<size_t>(r)][i] = s;
    }
    {
        std::lock_guard<std::mutex> lock(g.async_mutex_);
        g.in_flight_[pending.id].done = true;
    }
    g.async_changed_.notify_all();
    return pending;
}

void LocalCommunicator::allreduce_wait(PendingAllreduce pending) {
    LocalGroup& g = *group_;
    if (g.size_ == 1) return;
    std::unique_lock<std::mutex> lock(g.async_mutex_);
    auto it = g.in_flight_.find(pending.id);
    if (it == g.in_flight_.end()) throw Error("internal: waiting for an all-reduce that was never started");
    g.async_changed_.wait(lock, [&] { return it->second.done || g.async_aborted_; });
    if (!it->second.done) throw Error("stopped because another replica failed");
    if (++it->second.waited == g.size_) g.in_flight_.erase(it);
}

void LocalCommunicator::abort() {
    LocalGroup& g = *group_;
    g.barrier_.abort();
    {
        std::lock_guard<std::mutex> lock(g.async_mutex_);
        g.async_aborted_ = true;
    }
    g.async_changed_.notify_all();
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
