// Interrupt: SIGINT/SIGTERM handling for `fit`. The first signal only records
// itself; the trainer notices it at its next agreement point (every replica
// stops after the same step), writes a checkpoint and exits 128 + signal. A
// second signal exits at once (exit code 128 + signal): checkpoints are written
// to a temporary file and renamed, so the previous one stays intact.
#pragma once

#include <string>

#include "core/error.hpp"

namespace gputrain::train {

// Installs the handlers (idempotent). Call when training is about to start.
void install_interrupt_handlers();
// A closed pipe on stdout (fit ... | head) must not kill a run between
// checkpoints: what it could not print is lost, the training is not.
void ignore_broken_pipes();
// The first signal received since the last reset (SIGINT, SIGTERM), or 0.
int pending_interrupt();
// For tests and for a fresh run in the same process.
void reset_interrupts();
// As if `signal` had arrived once (tests).
void simulate_interrupt(int signal);

// "SIGINT", "SIGTERM"
std::string signal_name(int signal);

// Put before the handlers' notes ("[rank 1] "): a worker of a multi-worker
// job says which it is. Call before the handlers are installed (a note
// written meanwhile may be empty, never torn).
void set_interrupt_prefix(const std::string& prefix);

// Training stopped because of a signal after writing a checkpoint; exits 128 + signal.
class Interrupted : public Error {
public:
    Interrupted(const std::string& message, int signal) : Error(message), signal_(signal) {}
    int exit_code() const override { return 128 + signal_; }
    const char* label() const override { return "stopped"; }
    int signal() const { return signal_; }

private:
    int signal_;
};

}  // namespace gputrain::train
