// StepGuard: one replica's record of the steps whose summed gradients held a
// NaN or Inf, kept in backend memory (Backend::check_finite) so that the step
// loop never waits for it: the optimizer's update reads the flag on the device
// and the trainer reads the tally only when it reports progress.
//
// training.on_nan: stop needs the weights as they were before the bad step
// when it stops a few steps later: its flag is sticky (every update after the
// first bad step of the epoch is skipped too). skip_step, and fp16's loss
// scaling (which the trainer checks every step), skip that step only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "backend/backend.hpp"
#include "backend/buffer.hpp"

namespace gputrain::train {

class StepGuard {
public:
    explicit StepGuard(Backend& backend);
    ~StepGuard();
    StepGuard(const StepGuard&) = delete;
    StepGuard& operator=(const StepGuard&) = delete;

    // Forgets every step (an epoch's start); waits for the backend.
    void reset();
    // Tallies this step's summed gradients: the communicator's verdict when it
    // has one, else a pass over grads[0, n). In stream order; no wait.
    void check(const float* grads, size_t n, std::optional<bool> known);
    // What Optimizer::apply skips on (backend memory): this step's flag, or
    // with `sticky` whether any step since reset() was bad.
    const int32_t* skip_flag(bool sticky) const;
    // The words themselves (Backend::check_finite's layout; [0] is this step's verdict).
    const int32_t* words() const { return words_; }

    struct Tally {
        bool this_step_bad = false;  // the latest check
        int64_t bad_steps = 0;       // checks since reset() that found NaN/Inf
        int64_t steps = 0;           // checks since reset()
        int64_t first_bad = -1;      // index (0 = the first check since reset()) of the first bad one; -1 none
    };
    // Waits for the work queued so far and reads the tally.
    Tally read();

private:
    Backend& backend_;
    Buffer block_;
    int32_t* words_;  // Backend::kGuardWords, in block_
};

}  // namespace gputrain::train
