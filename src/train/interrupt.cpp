#include "train/interrupt.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace gputrain::train {

namespace {

std::atomic<int> first_signal{0};
char note_prefix[32] = {};  // "\n" and set_interrupt_prefix's, written before any handler runs
size_t note_prefix_length = 0;

// Only async-signal-safe calls here.
void write_note(const char* note, size_t length) {
    (void)!::write(STDERR_FILENO, "\n", 1);  // ends a progress line the ^C interrupted
    if (note_prefix_length) (void)!::write(STDERR_FILENO, note_prefix, note_prefix_length);
    (void)!::write(STDERR_FILENO, note, length);
}

extern "C" void on_signal(int signal) {
    int expected = 0;
    if (first_signal.compare_exchange_strong(expected, signal)) {
        constexpr char note[] =
            "gputrain: interrupt received; finishing this step and writing a checkpoint (press again to quit now)\n";
        write_note(note, sizeof note - 1);
        return;
    }
    // Second signal: leave at once.
    constexpr char note[] = "gputrain: second interrupt; exiting without a new checkpoint\n";
    write_note(note, sizeof note - 1);
    ::_exit(128 + signal);
}

}  // namespace

void set_interrupt_prefix(const std::string& prefix) {
    note_prefix_length = prefix.copy(note_prefix, sizeof note_prefix - 1);
    note_prefix[note_prefix_length] = '\0';
}

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
