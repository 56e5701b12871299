#include "optim/adam.hpp"

#include <cmath>

namespace gputrain::optim {

Adam::Adam(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count)
    : backend_(backend),
      type_(cfg.type),
      n_(param_count),
      beta1_(cfg.beta1),
      beta2_(cfg.beta2),
      epsilon_(cfg.epsilon),
      weight_decay_(cfg.type == "adamw" ? cfg.weight_decay : 0.0),
      m_(backend.allocate_floats(param_count)),
      v_(backend.allocate_floats(param_count)),
      scalars_(static_cast<math::AdamParams*>(backend.allocate_bytes(sizeof(math::AdamParams)))) {
    backend_.fill(m_, n_, 0.0f);
    backend_.fill(v_, n_, 0.0f);
}

Adam::~Adam() {
    backend_.release(m_);
    backend_.release(v_);
    backend_.release(scalars_);
}

void Adam::prepare(double learning_rate, int64_t step) {
    const double t = static_cast<double>(step);
    const double alpha = learning_rate * std::sqrt(1.0 - std::pow(beta2_, t)) / (1.0 - std::pow(beta1_, t));
    const math::AdamParams a{static_cast<float>(alpha), static_cast<float>(beta1_), static_cast<float>(beta2_),
                             static_cast<float>(epsilon_), static_cast<float>(learning_rate * weight_decay_)};
    backend_.upload(scalars_, &a, sizeof a);
}

void Adam::apply(float* params, const float* grads, const int32_t* skip) {
    backend_.adam_step_guarded(params, grads, m_, v_, n_, scalars_, skip);
}

}  // namespace gputrain::optim
