// LossScaler: dynamic loss scaling for training.precision: fp16, as
// torch.cuda.amp.GradScaler and Keras' LossScaleOptimizer do it. fp16's
// smallest normal number is 6e-5: small gradients would flush to zero inside
// fp16 GEMMs, so the loss gradient is multiplied by the scale before backward
// and the parameter gradients by its inverse before the optimizer. A step
// whose gradients overflow (Inf/NaN) is skipped and the scale halved; after
// 2000 good steps in a row it doubles. Powers of two only, so scaling and
// unscaling are exact in fp32.
//
// The state lives in backend memory and is updated there after each step's
// finite check (math::loss_scale_update), so the step loop never waits for it
// and a CUDA graph can hold the whole step; the host reads it at progress
// reports and checkpoints. Each replica owns one; they stay identical because
// every replica sees the same all-reduced gradients.
#pragma once

#include <cstdint>

#include "backend/backend.hpp"
#include "backend/buffer.hpp"

namespace gputrain::train {

class LossScaler {
public:
    // Disabled (fp32/tf32/bf16): no backend memory, nothing scaled.
    LossScaler(Backend& backend, bool enabled);
    ~LossScaler();
    LossScaler(const LossScaler&) = delete;
    LossScaler& operator=(const LossScaler&) = delete;

    bool enabled() const { return state_ != nullptr; }
    // Backend memory the step reads: the loss gradient's factor (RunContext::
    // loss_scale), the parameter gradients' factor, and the optimizer's skip
    // word (this step overflowed, or with `sticky` any step diverged).
    const float* scale_ptr() const { return &state_->scale; }
    const float* inverse_ptr() const { return &state_->inverse; }
    const int32_t* skip_flag() const { return &state_->skip; }

    // Queues the update from this step's finite check (StepGuard::words()).
    void update(const int32_t* guard, bool sticky);
    // Zeroes the counts (an epoch's start); the scale and its run of good steps carry on.
    void reset_counts();
    // Waits for the backend and reads the state.
    math::LossScaleState read() const;
    // Checkpointed state (resume continues with the same scale), clamped to
    // [1, 2^24] and good_steps >= 0.
    void restore(double scale, int64_t good_steps);

private:
    Backend& backend_;
    Buffer block_;
    math::LossScaleState* state_ = nullptr;  // in block_; null when disabled
};

}  // namespace gputrain::train
