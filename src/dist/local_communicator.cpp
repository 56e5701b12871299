#include "dist/local_communicator.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "dist/spin_wait.hpp"
#include "dist/stall_watch.hpp"

namespace gputrain::dist {

LocalGroup::LocalGroup(int size, double stall_warning_seconds)
    : size_(size),
      stall_warning_seconds_(stall_warning_seconds),
      progress_(std::make_unique<Progress[]>(static_cast<size_t>(size))),
      barrier_(size),
      float_buffers_(size),
      double_buffers_(size),
      slots_(std::make_unique<Slot[]>(kSlots)),
      spin_(spinning_pays(size)) {
    for (uint64_t i = 0; i < kSlots; ++i) {
        slots_[i].serves.store(i, std::memory_order_relaxed);
        slots_[i].buffers.assign(static_cast<size_t>(size), nullptr);
        slots_[i].counts.assign(static_cast<size_t>(size), 0);
    }
}

namespace {

// "replicas 0, 1" or "replica 2".
std::string replicas_text(const std::vector<int>& ranks) {
    std::string text = ranks.size() == 1 ? "replica " : "replicas ";
    for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
    return text;
}

}  // namespace

template <typename Arrived>
void LocalCommunicator::warn_stall(double waited, const std::string& what, Arrived arrived) const {
    std::vector<int> in, out;
    for (int r = 0; r < group_->size_; ++r) (r == rank_ || arrived(r) ? in : out).push_back(r);
    const std::string who =
        out.empty() ? "all " + std::to_string(in.size()) + " replicas have arrived"
                    : replicas_text(in) + (in.size() == 1 ? " has" : "") + " arrived, " + replicas_text(out) +
                          (out.size() == 1 ? " has not" : " have not") + " (still computing, stopped or hung)";
    spdlog::warn("warning: stall: replica {} has waited {:.0f} s in {} ({}); {}", rank_, std::floor(waited), what,
                 step_text(), who);
}

template <typename Done, typename What, typename Arrived>
void LocalCommunicator::wait_watched(Done done, What what, Arrived arrived) {
    LocalGroup& g = *group_;
    spin_then_wait(g.async_changes_, g.spin_, done,
                   stall_watch(g.stall_warning_seconds_, [&](double waited) { warn_stall(waited, what(), arrived); }));
}

void LocalCommunicator::meet(const char* what) {
    LocalGroup& g = *group_;
    const uint64_t round = ++rounds_;
    g.progress_[rank_].rounds.store(round, std::memory_order_relaxed);
    g.barrier_.arrive_and_wait(stall_watch(g.stall_warning_seconds_, [&](double waited) {
        warn_stall(waited, what, [&](int r) { return g.progress_[r].rounds.load(std::memory_order_relaxed) >= round; });
    }));
}

template <typename T>
void LocalCommunicator::allreduce(T* data, size_t count, std::vector<T*>& buffers, std::vector<T>& sum,
                                  const char* what) {
    LocalGroup& g = *group_;
    if (g.size_ == 1) return;
    if (rank_ == 0 && sum.size() < count) sum.resize(count);
    buffers[rank_] = data;
    meet(what);  // every rank's buffer is published and `sum` is large enough
    const size_t begin = count * rank_ / g.size_, end = count * (rank_ + 1) / g.size_;
    for (size_t i = begin; i < end; ++i) {
        T s = buffers[0][i];
        for (int r = 1; r < g.size_; ++r) s += buffers[r][i];
        sum[i] = s;
    }
    meet(what);  // every slice is summed
    std::copy(sum.begin(), sum.begin() + static_cast<std::ptrdiff_t>(count), data);
    meet(what);  // nobody reuses `sum` before all have copied it out
}

void LocalCommunicator::allreduce_sum(float* data, size_t count) {
    allreduce(data, count, group_->float_buffers_, group_->float_sum_, "an all-reduce");
}

PendingAllreduce LocalCommunicator::allreduce_sum_start(float* data, size_t count) {
    LocalGroup& g = *group_;
    const PendingAllreduce pending{next_async_};
    if (g.size_ == 1) {
        ++next_async_;
        return pending;
    }
    if (g.async_aborted_.load(std::memory_order_acquire)) throw Error("stopped because another replica failed");
    if (next_async_ - next_wait_ >= LocalGroup::kSlots) {
        throw Error("internal: replica " + std::to_string(rank_) + " has more than " +
                    std::to_string(LocalGroup::kSlots) + " all-reduces in flight");
    }
    ++next_async_;
    LocalGroup::Slot& slot = g.slots_[pending.id % LocalGroup::kSlots];
    // Free once every rank has waited for the all-reduce kSlots earlier (at once, normally).
    const uint64_t earlier = pending.id - LocalGroup::kSlots;  // only when pending.id >= kSlots
    wait_watched(
        [&] {
            return slot.serves.load(std::memory_order_acquire) == pending.id ||
                   g.async_aborted_.load(std::memory_order_acquire);
        },
        [&] {
            return "the start of asynchronous all-reduce #" + std::to_string(pending.id) + " (its slot waits for #" +
                   std::to_string(earlier) + " to be waited for)";
        },
        [&](int r) { return g.progress_[r].released.load(std::memory_order_relaxed) > earlier; });
    if (g.async_aborted_.load(std::memory_order_acquire)) throw Error("stopped because another replica failed");
    slot.buffers[static_cast<size_t>(rank_)] = data;
    slot.counts[static_cast<size_t>(rank_)] = count;
    g.progress_[rank_].posted.store(pending.id + 1, std::memory_order_relaxed);
    // acq_rel: the last to arrive sees every rank's buffer and count.
    if (slot.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 < static_cast<uint32_t>(g.size_)) return pending;
    for (int r = 0; r < g.size_; ++r) {
        if (slot.counts[static_cast<size_t>(r)] != count) {
            throw Error("internal: replica " + std::to_string(rank_) + " started an all-reduce of " +
                        std::to_string(count) + " floats where replica " + std::to_string(r) + " started " +
                        std::to_string(slot.counts[static_cast<size_t>(r)]));
        }
    }
    slot.count = count;
    slot.chunks = static_cast<uint32_t>((count + LocalGroup::kChunkFloats - 1) / LocalGroup::kChunkFloats);
    slot.ready.store(1, std::memory_order_release);
    notify_change(g.async_changes_);
    // The others are computing on: sum what nobody else has claimed.
    sum_chunks(slot, g.size_, g.async_changes_);
    return pending;
}

void LocalCommunicator::sum_chunks(LocalGroup::Slot& slot, int ranks, ChangeCounter& changes) {
    float* const* buffers = slot.buffers.data();
    for (;;) {
        const uint32_t chunk = slot.next_chunk.fetch_add(1, std::memory_order_relaxed);
        if (chunk >= slot.chunks) return;
        const size_t begin = static_cast<size_t>(chunk) * LocalGroup::kChunkFloats;
        const size_t end = std::min(slot.count, begin + LocalGroup::kChunkFloats);
        // The sums' exponent bits say whether any is NaN or infinite (all ones),
        // checked on the way so that the trainer needs no pass of its own.
        uint32_t all_ones = 0;
        const auto note = [&all_ones](float s) {
            uint32_t bits;
            std::memcpy(&bits, &s, sizeof bits);
            all_ones |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
        };
        if (ranks == 2) {  // the common case, written so that it vectorizes
            float* __restrict a = buffers[0];
            float* __restrict b = buffers[1];
            for (size_t i = begin; i < end; ++i) {
                const float s = a[i] + b[i];
                a[i] = s;
                b[i] = s;
                note(s);
            }
        } else {
            for (size_t i = begin; i < end; ++i) {
                float s = buffers[0][i];
                for (int r = 1; r < ranks; ++r) s += buffers[r][i];
                for (int r = 0; r < ranks; ++r) buffers[r][i] = s;
                note(s);
            }
        }
        if (all_ones) slot.nonfinite.store(1, std::memory_order_relaxed);  // published by chunks_done below
        // acq_rel: whoever sees the final count sees every chunk's writes.
        if (slot.chunks_done.fetch_add(1, std::memory_order_acq_rel) + 1 == slot.chunks) notify_change(changes);
    }
}

std::optional<bool> LocalCommunicator::allreduce_wait_finite(PendingAllreduce pending) {
    LocalGroup& g = *group_;
    if (g.size_ == 1) {  // nothing was summed, so nothing was checked
        ++next_wait_;
        return std::nullopt;
    }
    if (pending.id != next_wait_ || pending.id >= next_async_) {
        throw Error("internal: replica " + std::to_string(rank_) + " waited for all-reduce " +
                    std::to_string(pending.id) + " where " + std::to_string(next_wait_) + " was next");
    }
    ++next_wait_;
    LocalGroup::Slot& slot = g.slots_[pending.id % LocalGroup::kSlots];
    const auto aborted = [&] { return g.async_aborted_.load(std::memory_order_acquire); };
    const auto what = [&] { return "asynchronous all-reduce #" + std::to_string(pending.id); };
    const auto posted = [&](int r) { return g.progress_[r].posted.load(std::memory_order_relaxed) > pending.id; };
    wait_watched([&] { return slot.ready.load(std::memory_order_acquire) != 0 || aborted(); }, what, posted);
    if (aborted()) throw Error("stopped because another replica failed");
    sum_chunks(slot, g.size_, g.async_changes_);  // help with what is left
    wait_watched([&] { return slot.chunks_done.load(std::memory_order_acquire) == slot.chunks || aborted(); }, what,
                 posted);
    if (slot.chunks_done.load(std::memory_order_acquire) != slot.chunks) {
        throw Error("stopped because another replica failed");
    }
    const bool finite = slot.nonfinite.load(std::memory_order_relaxed) == 0;  // read before the slot is handed on
    g.progress_[rank_].released.store(pending.id + 1, std::memory_order_relaxed);
    if (slot.released.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(g.size_)) {
        // Everyone is done with this all-reduce: hand the slot to id + kSlots.
        slot.arrived.store(0, std::memory_order_relaxed);
        slot.ready.store(0, std::memory_order_relaxed);
        slot.next_chunk.store(0, std::memory_order_relaxed);
        slot.chunks_done.store(0, std::memory_order_relaxed);
        slot.released.store(0, std::memory_order_relaxed);
        slot.nonfinite.store(0, std::memory_order_relaxed);
        slot.serves.store(pending.id + LocalGroup::kSlots, std::memory_order_release);
        notify_change(g.async_changes_);
    }
    return finite;
}

void LocalCommunicator::abort() {
    LocalGroup& g = *group_;
    g.barrier_.abort();
    g.async_aborted_.store(true, std::memory_order_release);
    notify_change(g.async_changes_);
}

void LocalCommunicator::allreduce_sum_host(double* data, size_t count) {
    allreduce(data, count, group_->double_buffers_, group_->double_sum_, "a host all-reduce");
}

void LocalCommunicator::barrier() {
    if (group_->size_ > 1) meet("a barrier");
}

std::vector<std::unique_ptr<Communicator>> make_local_communicators(int size, double stall_warning_seconds) {
    auto group = std::make_shared<LocalGroup>(size, stall_warning_seconds);
    std::vector<std::unique_ptr<Communicator>> out;
    for (int r = 0; r < size; ++r) out.push_back(std::make_unique<LocalCommunicator>(group, r));
    return out;
}

}  // namespace gputrain::dist
