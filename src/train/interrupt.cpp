#include "train/interrupt.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace gputrain::train {

namespace {

std::atomic<int> first_signal{0};

extern "C" void on_signal(int signal) {
    int expected = 0;
    if (first_signal.compare_exchange_strong(expected, signal)) {
        constexpr char note[] =
            "\ngputrain: interrupt received; finishing this step and writing a checkpoint (press again to quit now)\n";
        (void)!::write(STDERR_FILENO, note, sizeof note - 1);
        return;
    }
    // Second signal: leave at once. Only async-signal-safe calls here.
    constexpr char note[] = "\ngputrain: second interrupt; exiting without a new checkpoint\n";
    (void)!::write(STDERR_FILENO, note, sizeof note - 1);
    ::_exit(128 + signal);
}

}  // namespace

void install_interrupt_handlers() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

void ignore_broken_pipes() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, nullptr);
}

int pending_interrupt() { return first_signal.load(std::memory_order_relaxed); }

void reset_interrupts() { first_signal.store(0); }

void simulate_interrupt(int signal) { first_signal.store(signal); }

std::string signal_name(int signal) {
    switch (signal) {
        case SIGINT: return "SIGINT";
        case SIGTERM: return "SIGTERM";
        default: return "signal " + std::to_string(signal);
    }
}

}  // namespace gputrain::train
