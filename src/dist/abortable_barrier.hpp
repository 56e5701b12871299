// AbortableBarrier: a reusable barrier for N threads that another thread can
// abort: every waiter (now or later) then throws. One failing replica must
// release the others instead of leaving them waiting forever.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "core/error.hpp"

namespace gputrain::dist {

class AbortableBarrier {
public:
    explicit AbortableBarrier(int count) : count_(count) {}

    void arrive_and_wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        if (aborted_) throw Error("stopped because another replica failed");
        const uint64_t generation = generation_;
        if (++arrived_ == count_) {
            arrived_ = 0;
            ++generation_;
            changed_.notify_all();
            return;
        }
        changed_.wait(lock, [&] { return generation_ != generation || aborted_; });
        if (generation_ == generation) throw Error("stopped because another replica failed");
    }

    void abort() {
        std::lock_guard<std::mutex> lock(mutex_);
        aborted_ = true;
        changed_.notify_all();
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    int count_;
    int arrived_ = 0;
    uint64_t generation_ = 0;
    bool aborted_ = false;
};

}  // namespace gputrain::dist
