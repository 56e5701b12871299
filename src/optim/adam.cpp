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
    const double alpha = learning_rate * std::sqrt(1.0 - std::pow(beta2_, t)) / (1.0 - std::pow(beta1_, t));
    const math::AdamParams a{static_cast<float>(alpha), static_cast<float>(beta1_), static_cast<float>(beta2_),
                             static_cast<float>(epsilon_), static_cast<float>(learning_rate * weight_decay_)};
    backend_.upload(scalars_, &a, sizeof a);
}

void Adam::apply(float* params, const float* grads, const int32_t* skip) {
    backend_.adam_step_guarded(params, grads, m_, v_, n_, scalars_, skip);
}

}  // namespace gputrain::optim
