#include "optim/rmsprop.hpp"

#include <cstring>
#include <vector>

#include "backend/ops/optimizers.hpp"

namespace gputrain::optim {

Rmsprop::Rmsprop(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count)
    : Optimizer(param_count),
      backend_(backend),
      n_(param_count),
      rho_(cfg.rho),
      momentum_(cfg.momentum),
      epsilon_(cfg.epsilon),
      centered_(cfg.centered),
      v_block_(float_buffer(backend, param_count)),
      scalars_block_(backend, sizeof(math::RmspropParams)),
      v_(v_block_.floats()),
      scalars_(scalars_block_.as<math::RmspropParams>()) {
    backend_.fill(v_, n_, 0.0f);
    if (momentum_ > 0.0) {
        momentum_block_ = float_buffer(backend, param_count);
        momentum_slot_ = momentum_block_.floats();
        backend_.fill(momentum_slot_, n_, 0.0f);
    }
    if (centered_) {
        mean_grad_block_ = float_buffer(backend, param_count);
        mean_grad_ = mean_grad_block_.floats();
        backend_.fill(mean_grad_, n_, 0.0f);
    }
}

void Rmsprop::prepare(double learning_rate, int64_t) {
    std::vector<math::RmspropParams> sets(kinds_.size());
    for (size_t k = 0; k < kinds_.size(); ++k) {
        math::RmspropParams& r = sets[k];
        std::memset(&r, 0, sizeof r);  // every uploaded byte defined
        r.learning_rate = static_cast<float>(learning_rate * kinds_[k].multiplier);
        r.rho = static_cast<float>(rho_);
        r.momentum = static_cast<float>(momentum_);
        r.epsilon = static_cast<float>(epsilon_);
        r.decay = 0.0f;
        r.centered = centered_ ? 1 : 0;
    }
    // One upload per set: an upload carries at most Backend::kUploadBytes, and
    // no_decay with lr_multipliers can make more kinds than fit in one.
    for (size_t k = 0; k < sets.size(); ++k) backend_.upload(scalars_ + k, &sets[k], sizeof(math::RmspropParams));
}

void Rmsprop::apply(float* params, const float* grads, const int32_t* skip) {
    for (const Run& r : runs_) {
        const size_t o = r.offset;
        run_op(backend_, ops::RmspropStep{params + o, grads + o, v_ + o, momentum_slot_ ? momentum_slot_ + o : nullptr,
                                          mean_grad_ ? mean_grad_ + o : nullptr, r.count, scalars_ + r.kind, skip});
    }
}

void Rmsprop::adopt_state(const std::vector<StateSlot>& slots) {
    // In state()'s order: v, then the momentum and the mean gradient where kept.
    size_t s = 0;
    v_ = slots.at(s++).data;
    v_block_.reset();
    if (momentum_slot_) {
        momentum_slot_ = slots.at(s++).data;
        momentum_block_.reset();
    }
    if (mean_grad_) {
        mean_grad_ = slots.at(s++).data;
        mean_grad_block_.reset();
    }
}

void Rmsprop::kinds_changed() {
    scalars_block_ = Buffer(backend_, kinds_.size() * sizeof(math::RmspropParams));
    scalars_ = scalars_block_.as<math::RmspropParams>();
}

std::vector<StateSlot> Rmsprop::state() {
    std::vector<StateSlot> slots{{"rmsprop_v", v_}};
    if (momentum_slot_) slots.push_back({"rmsprop_momentum", momentum_slot_});
    if (mean_grad_) slots.push_back({"rmsprop_mean_grad", mean_grad_});
    return slots;
}

}  // namespace gputrain::optim
