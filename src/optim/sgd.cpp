#include "optim/sgd.hpp"

#include <cstring>
#include <vector>

namespace gputrain::optim {

Sgd::Sgd(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count)
    : Optimizer(param_count),
      backend_(backend),
      n_(param_count),
      momentum_(cfg.momentum),
      nesterov_(cfg.nesterov),
      scalars_block_(backend, sizeof(math::SgdParams)),
      scalars_(scalars_block_.as<math::SgdParams>()) {
    if (momentum_ > 0.0) {
        velocity_block_ = float_buffer(backend, param_count);
        velocity_ = velocity_block_.floats();
        backend_.fill(velocity_, n_, 0.0f);
    }
}

Sgd::~Sgd() = default;

void Sgd::prepare(double learning_rate, int64_t) {
    std::vector<math::SgdParams> sets(kinds_.size());
    for (size_t k = 0; k < kinds_.size(); ++k) {
        math::SgdParams& s = sets[k];
        std::memset(&s, 0, sizeof s);  // the padding too: every uploaded byte is defined
        s.learning_rate = static_cast<float>(learning_rate * kinds_[k].multiplier);
        s.momentum = static_cast<float>(cycled_momentum_ >= 0 ? cycled_momentum_ : momentum_);
        s.nesterov = nesterov_;
    }
    // One upload per set: an upload carries at most Backend::kUploadBytes, and
    // no_decay with lr_multipliers can make more kinds than fit in one.
    for (size_t k = 0; k < sets.size(); ++k) backend_.upload(scalars_ + k, &sets[k], sizeof(math::SgdParams));
}

void Sgd::apply(float* params, const float* grads, const int32_t* skip) {
    for (const Run& r : runs_)
        backend_.sgd_step_guarded(params + r.offset, grads + r.offset, velocity_ ? velocity_ + r.offset : nullptr,
                                  r.count, scalars_ + r.kind, skip);
}

void Sgd::adopt_state(const std::vector<StateSlot>& slots) {
    if (!velocity_) return;  // nothing kept without momentum
    velocity_ = slots.at(0).data;
    velocity_block_.reset();
}

void Sgd::kinds_changed() {
    scalars_block_ = Buffer(backend_, kinds_.size() * sizeof(math::SgdParams));
    scalars_ = scalars_block_.as<math::SgdParams>();
}

std::vector<StateSlot> Sgd::state() {
    if (!velocity_) return {};
    return {{"velocity", velocity_}};
}

}  // namespace gputrain::optim
