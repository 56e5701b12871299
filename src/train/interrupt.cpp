#include "train/interrupt.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <string>

namespace gputrain::train {

namespace {

std::atomic<int> first_signal{0};

// The handlers' notes, whole (set_interrupt_prefix's prefix in them), so that
// each is one write: workers signalled at once do not interleave their pieces.
constexpr char kFirst[] =
    "gputrain: interrupt received; finishing this step and writing a checkpoint (press again to quit now)\n";
constexpr char kSecond[] = "gputrain: second interrupt; exiting without a new checkpoint\n";
struct Note {
    char text[256];
    std::atomic<size_t> length{0};
};
Note first_note, second_note;

// "\n" (it ends a progress line the ^C interrupted), the prefix, the note.
void compose(Note& note, const std::string& prefix, const char* text, size_t text_length) {
    const std::string whole = "\n" + prefix + std::string(text, text_length);
    const size_t n = std::min(whole.size(), sizeof note.text);
    note.length.store(0, std::memory_order_release);  // a handler meanwhile writes nothing rather than half
    whole.copy(note.text, n);
    note.length.store(n, std::memory_order_release);
}

[[maybe_unused]] const bool notes_composed = [] {
    compose(first_note, "", kFirst, sizeof kFirst - 1);
    compose(second_note, "", kSecond, sizeof kSecond - 1);
    return true;
}();

// Only async-signal-safe calls here.
void write_note(const Note& note) {
    (void)!::write(STDERR_FILENO, note.text, note.length.load(std::memory_order_acquire));
}

extern "C" void on_signal(int signal) {
    int expected = 0;
    if (first_signal.compare_exchange_strong(expected, signal)) {
        write_note(first_note);
        return;
    }
    // Second signal: leave at once.
    write_note(second_note);
    ::_exit(128 + signal);
}

}  // namespace

void set_interrupt_prefix(const std::string& prefix) {
    compose(first_note, prefix, kFirst, sizeof kFirst - 1);
    compose(second_note, prefix, kSecond, sizeof kSecond - 1);
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
