// Waiting between replica threads of one process: spin briefly, then sleep.
//
// A CPU training step of the reference job takes about 0.2 ms and its
// replicas meet at least once per step. Sleeping on a mutex and condition
// variable costs tens of microseconds per wake-up on a virtual machine, a
// tenth of the step; a short spin catches the partner that arrives a few
// microseconds later. The spin only runs where every replica has a core of
// its own: with more threads than cores it would take the core the partner
// needs, so there the wait sleeps at once.
//
// The sleeping side waits on a 32-bit counter (ChangeCounter: a futex) that
// the waking side bumps after making the condition true, so no wake-up is
// lost: a change between reading the counter and sleeping makes the sleep
// return at once. The sleep may be timed, so that a waiter can wake every
// interval and say what it waits for (the stall warning); the spin is the
// same either way.
#pragma once

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <thread>
#include <utility>

namespace gputrain::dist {

// No PAUSE instruction: in a virtual machine a PAUSE loop makes the
// hypervisor deschedule the spinning vCPU (pause-loop exiting). Measured on
// this project's 2-vCPU KVM guest, a two-thread barrier round took 12.5 us
// spinning with PAUSE, 2.8 us sleeping on a futex and 0.6 us spinning on
// plain loads. Each thread has a core of its own when spinning (see below),
// so there is no hyperthread sibling to slow down.
inline void cpu_relax() { std::atomic_signal_fence(std::memory_order_seq_cst); }

// True when `threads` waiting threads all fit on the machine's cores.
inline bool spinning_pays(int threads) {
    const unsigned cores = std::thread::hardware_concurrency();
    return cores > 0 && static_cast<unsigned>(threads) <= cores;
}

// Polls before sleeping: on the order of 20-50 microseconds.
inline constexpr int kSpinIterations = 1 << 15;

// A counter that waiters sleep on and wakers bump. What C++20's atomic
// wait/notify do on Linux (libstdc++: a few yields, then FUTEX_WAIT; a wake
// only where a waiter sleeps), plus a timeout, which they lack. The sleeper
// count is this counter's own: a raw futex wait is invisible to libstdc++'s
// notify, which skips the wake when its own count says nobody sleeps.
class ChangeCounter {
public:
    uint32_t load() const { return value_.load(std::memory_order_acquire); }

    // After making a waiter's condition true: wakes every sleeper. seq_cst on
    // both sides (here and in wait): either the waker sees the sleeper, or
    // the sleeper's futex sees the new value and does not sleep.
    void bump() {
        value_.fetch_add(1, std::memory_order_seq_cst);
        if (sleepers_.load(std::memory_order_seq_cst) != 0) futex(FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
    }

    // Returns once the value is no longer `seen`, after `timeout` (0 or less:
    // none), or spuriously.
    void wait(uint32_t seen, std::chrono::nanoseconds timeout = std::chrono::nanoseconds{0}) const {
        for (int i = 0; i < 4; ++i) {  // the partner may be about to bump it (libstdc++ yields as often)
            if (value_.load(std::memory_order_acquire) != seen) return;
            sched_yield();
        }
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        if (timeout.count() > 0) {
            const auto ns = timeout.count();
            timespec relative{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
            futex(FUTEX_WAIT_PRIVATE, seen, &relative);  // EAGAIN (changed), EINTR, ETIMEDOUT: the caller looks
        } else {
            futex(FUTEX_WAIT_PRIVATE, seen, nullptr);
        }
        sleepers_.fetch_sub(1, std::memory_order_release);
    }

private:
    long futex(int op, uint32_t value, const timespec* timeout) const {
        return syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&value_), op, value, timeout, nullptr, 0);
    }

    static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);
    std::atomic<uint32_t> value_{0};
    mutable std::atomic<uint32_t> sleepers_{0};
};

// How long a waiter may wait before it says so, and what it says: on_stall(s)
// with the seconds waited, once per interval while it waits. interval 0: never.
template <typename OnStall>
struct StallWatch {
    double interval_seconds = 0;
    OnStall on_stall;
};
inline constexpr auto kNoStallWatch = StallWatch<void (*)(double)>{0, nullptr};

template <typename OnStall>
StallWatch<OnStall> stall_watch(double interval_seconds, OnStall on_stall) {
    return {interval_seconds, std::move(on_stall)};
}

// Returns once done() holds. `changes` is bumped by whoever may make done()
// true (ChangeCounter::bump). After the spin, a watched wait sleeps at most
// until the next interval is up and calls watch.on_stall there.
template <typename Done, typename OnStall>
void spin_then_wait(const ChangeCounter& changes, bool spin, Done done, const StallWatch<OnStall>& watch) {
    if (spin) {
        for (int i = 0; i < kSpinIterations; ++i) {
            if (done()) return;
            cpu_relax();
        }
    }
    if (watch.interval_seconds <= 0) {
        for (;;) {
            const uint32_t seen = changes.load();
            if (done()) return;
            changes.wait(seen);
        }
    }
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto interval =
        std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(watch.interval_seconds));
    auto next = start + interval;
    for (;;) {
        const uint32_t seen = changes.load();
        if (done()) return;
        auto now = clock::now();
        if (now >= next) {
            watch.on_stall(std::chrono::duration<double>(now - start).count());
            now = clock::now();
            while (next <= now) next += interval;
        }
        changes.wait(seen, std::chrono::duration_cast<std::chrono::nanoseconds>(next - now));
    }
}

template <typename Done>
void spin_then_wait(const ChangeCounter& changes, bool spin, Done done) {
    spin_then_wait(changes, spin, done, kNoStallWatch);
}

// After making a waiter's condition true: wakes every sleeper.
inline void notify_change(ChangeCounter& changes) { changes.bump(); }

}  // namespace gputrain::dist
