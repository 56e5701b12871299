#include "train/loss_scaler.hpp"

#include <algorithm>

namespace gputrain::train {

bool LossScaler::absorb_overflow() {
    if (!enabled_ || scale_ <= kMinScale) return false;
    scale_ = std::max(kMinScale, scale_ * 0.5);
    good_steps_ = 0;
    return true;
}

void LossScaler::step_applied() {
    if (!enabled_) return;
    if (++good_steps_ >= kGrowthInterval) {
        // fp32 holds 2^127; 2^24 is plenty (PyTorch has no cap; gradients times
        // more than that overflow fp16 anyway, and halving brings it back).
        scale_ = std::min(scale_ * 2.0, 16777216.0);
        good_steps_ = 0;
    }
}

void LossScaler::restore(double scale, int64_t good_steps) {
    if (!enabled_) return;
    scale_ = std::clamp(scale, kMinScale, 16777216.0);
    good_steps_ = std::max<int64_t>(0, good_steps);
}

}  // namespace gputrain::train
