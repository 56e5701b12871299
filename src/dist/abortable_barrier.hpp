// AbortableBarrier: a reusable barrier for N threads that another thread can
// abort: every waiter (now or later) then throws. One failing replica must
// release the others instead of leaving them waiting forever.
//
// Lock-free on the way in; waiters spin briefly, then sleep (spin_wait.hpp),
// optionally saying every interval that they still wait (a StallWatch).
#pragma once

#include <atomic>
#include <cstdint>

#include "core/error.hpp"
#include "dist/spin_wait.hpp"

namespace gputrain::dist {

class AbortableBarrier {
public:
    explicit AbortableBarrier(int count) : count_(static_cast<uint32_t>(count)), spin_(spinning_pays(count)) {}

    void arrive_and_wait() { arrive_and_wait(kNoStallWatch); }

    template <typename OnStall>
    void arrive_and_wait(const StallWatch<OnStall>& watch) {
        if (aborted_.load(std::memory_order_acquire)) throw Error("stopped because another replica failed");
        // The generation cannot move before this thread has arrived.
        const uint32_t generation = generation_.load();
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == count_) {
            // Reset before the release below: nobody arrives for the next
            // round before seeing the new generation.
            arrived_.store(0, std::memory_order_relaxed);
            notify_change(generation_);
            return;
        }
        spin_then_wait(
            generation_, spin_,
            [&] { return generation_.load() != generation || aborted_.load(std::memory_order_acquire); }, watch);
        if (aborted_.load(std::memory_order_acquire)) throw Error("stopped because another replica failed");
    }

    void abort() {
        aborted_.store(true, std::memory_order_release);
        notify_change(generation_);  // wakes the sleepers, who then see aborted_
    }

private:
    const uint32_t count_;
    const bool spin_;
    std::atomic<uint32_t> arrived_{0};
    ChangeCounter generation_;
    std::atomic<bool> aborted_{false};
};

}  // namespace gputrain::dist
