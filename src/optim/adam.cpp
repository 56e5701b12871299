#include "optim/adam.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gputrain::optim {

Adam::Adam(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count)
    : Optimizer(param_count),
      backend_(backend),
      type_(cfg.type),
      n_(param_count),
      beta1_(cfg.beta1),
      beta2_(cfg.beta2),
      epsilon_(cfg.epsilon),
      weight_decay_(cfg.type == config::OptimizerType::adamw ? cfg.weight_decay : 0.0),
      m_block_(float_buffer(backend, param_count)),
      v_block_(float_buffer(backend, param_count)),
      scalars_block_(backend, sizeof(math::AdamParams)),
      m_(m_block_.floats()),
      v_(v_block_.floats()),
      scalars_(scalars_block_.as<math::AdamParams>()) {
    backend_.fill(m_, n_, 0.0f);
    backend_.fill(v_, n_, 0.0f);
}

Adam::~Adam() = default;

void Adam::prepare(double learning_rate, int64_t step) {
    const double t = static_cast<double>(step);
    // A cycled beta1 enters the bias correction as it is this step, as in PyTorch's Adam.
    const double beta1 = cycled_momentum_ >= 0 ? cycled_momentum_ : beta1_;
    std::vector<math::AdamParams> sets;
    for (const Kind& k : kinds_) {
        const double rate = learning_rate * k.multiplier;
        const double alpha = rate * std::sqrt(1.0 - std::pow(beta2_, t)) / (1.0 - std::pow(beta1, t));
        sets.push_back({static_cast<float>(alpha), static_cast<float>(beta1), static_cast<float>(beta2_),
                        static_cast<float>(epsilon_), k.decays ? static_cast<float>(rate * weight_decay_) : 0.0f});
    }
    // One upload per set: an upload carries at most Backend::kUploadBytes, and
    // no_decay with lr_multipliers can make more kinds than fit in one.
    for (size_t k = 0; k < sets.size(); ++k) backend_.upload(scalars_ + k, &sets[k], sizeof(math::AdamParams));
}

void Adam::apply(float* params, const float* grads, const int32_t* skip) {
    // One run of every parameter unless optimizer.no_decay or an lr_multiplier splits them.
    for (const Run& r : runs_)
        backend_.adam_step_guarded(params + r.offset, grads + r.offset, m_ + r.offset, v_ + r.offset, r.count,
                                   scalars_ + r.kind, skip);
}

void Adam::adopt_state(const std::vector<StateSlot>& slots) {
    m_ = slots.at(0).data;
    v_ = slots.at(1).data;
    m_block_.reset();
    v_block_.reset();
}

void Adam::kinds_changed() {
    scalars_block_ = Buffer(backend_, kinds_.size() * sizeof(math::AdamParams));
    scalars_ = scalars_block_.as<math::AdamParams>();
}

}  // namespace gputrain::optim
