// LossScaler: dynamic loss scaling for training.precision: fp16, as
// torch.cuda.amp.GradScaler and Keras' LossScaleOptimizer do it. fp16's
// smallest normal number is 6e-5: small gradients would flush to zero inside
// fp16 GEMMs, so the loss gradient is multiplied by `scale()` before backward
// and the parameter gradients divided by it before the optimizer. A step whose
// gradients overflow (Inf/NaN) is skipped and the scale halved; after
// `growth_interval` good steps in a row it doubles. Powers of two only, so
// scaling and unscaling are exact in fp32.
//
// Each replica thread owns one; they stay identical because every replica sees
// the same all-reduced gradients and so makes the same calls.
#pragma once

#include <cstdint>

namespace gputrain::train {

class LossScaler {
public:
    static constexpr double kInitialScale = 65536.0;  // 2^16, as PyTorch
    static constexpr double kMinScale = 1.0;          // below this a non-finite gradient is real divergence
    static constexpr int64_t kGrowthInterval = 2000;

    // Disabled: scale() is 1 and a non-finite gradient is never an overflow.
    explicit LossScaler(bool enabled) : enabled_(enabled), scale_(enabled ? kInitialScale : 1.0) {}

    bool enabled() const { return enabled_; }
    float scale() const { return static_cast<float>(scale_); }
    int64_t good_steps() const { return good_steps_; }

    // A step with non-finite gradients: true when it is an overflow the scaler
    // absorbs (the scale is halved and the step skipped); false when the scale
    // is already at its floor (or scaling is off): then it is divergence.
    bool absorb_overflow();
    // A step with finite gradients was applied.
    void step_applied();

    // Checkpointed state (resume continues with the same scale).
    void restore(double scale, int64_t good_steps);

private:
    bool enabled_;
    double scale_;
    int64_t good_steps_ = 0;
};

}  // namespace gputrain::train
