#include "optim/adam.hpp"

#include <algorithm>
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
      scalars_block_(backend, 2 * sizeof(math::AdamParams)),
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
    const math::AdamParams a[2] = {
        {static_cast<float>(alpha), static_cast<float>(beta1_), static_cast<float>(beta2_),
         static_cast<float>(epsilon_), static_cast<float>(learning_rate * weight_decay_)},
        {static_cast<float>(alpha), static_cast<float>(beta1_), static_cast<float>(beta2_),
         static_cast<float>(epsilon_), 0.0f}};
    backend_.upload(scalars_, a, runs_.empty() ? sizeof a[0] : sizeof a);
}

void Adam::apply(float* params, const float* grads, const int32_t* skip) {
    if (runs_.empty()) {
        backend_.adam_step_guarded(params, grads, m_, v_, n_, scalars_, skip);
        return;
    }
    for (const Run& r : runs_)
        backend_.adam_step_guarded(params + r.offset, grads + r.offset, m_ + r.offset, v_ + r.offset, r.count,
                                   scalars_ + (r.decays ? 0 : 1), skip);
}

void Adam::set_decay_exempt(const std::vector<std::pair<size_t, size_t>>& ranges) {
    runs_.clear();
    if (ranges.empty() || weight_decay_ == 0.0) return;
    std::vector<char> exempt(n_, 0);
    for (const auto& [offset, count] : ranges) std::fill_n(exempt.begin() + static_cast<std::ptrdiff_t>(offset), count, 1);
    for (size_t i = 0; i < n_;) {
        size_t j = i;
        while (j < n_ && exempt[j] == exempt[i]) ++j;
        runs_.push_back({i, j - i, exempt[i] == 0});
        i = j;
    }
}

}  // namespace gputrain::optim
