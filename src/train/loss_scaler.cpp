#include "train/loss_scaler.hpp"

#include <algorithm>

namespace gputrain::train {

LossScaler::LossScaler(Backend& backend, bool enabled) : backend_(backend) {
    if (!enabled) return;
    block_ = Buffer(backend, sizeof(math::LossScaleState));
    state_ = block_.as<math::LossScaleState>();
    const math::LossScaleState initial;
    backend_.copy_to_device(state_, &initial, sizeof initial);
}

LossScaler::~LossScaler() = default;

void LossScaler::update(const int32_t* guard, bool sticky) { backend_.loss_scale_update(state_, guard, sticky); }

void LossScaler::reset_counts() {
    math::LossScaleState s = read();
    s.overflows = s.divergences = s.first_divergence = s.steps = 0;
    backend_.copy_to_device(state_, &s, sizeof s);
}

math::LossScaleState LossScaler::read() const {
    math::LossScaleState s;
    backend_.copy_to_host(&s, state_, sizeof s);
    return s;
}

void LossScaler::restore(double scale, int64_t good_steps) {
    if (!state_) return;
    math::LossScaleState s = read();
    s.scale = static_cast<float>(std::clamp(scale, double{math::kMinLossScale}, double{math::kMaxLossScale}));
    s.inverse = 1.0f / s.scale;
    s.good_steps = static_cast<int32_t>(std::clamp<int64_t>(good_steps, 0, math::kLossScaleGrowthInterval - 1));
    backend_.copy_to_device(state_, &s, sizeof s);
}

}  // namespace gputrain::train
