#include "optim/schedule.hpp"

#include <algorithm>
#include <cmath>

namespace gputrain::optim {

Schedule::Schedule(const config::OptimizerConfig& cfg, int64_t steps_per_epoch, int64_t total_epochs)
    : cfg_(cfg.schedule),
      base_(cfg.learning_rate),
      steps_per_epoch_(std::max<int64_t>(1, steps_per_epoch)),
      total_steps_(std::max<int64_t>(1, steps_per_epoch) * std::max<int64_t>(1, total_epochs)),
      warmup_steps_(cfg.schedule.warmup_epochs * std::max<int64_t>(1, steps_per_epoch)) {}

double Schedule::learning_rate(int64_t global_step) const {
    if (global_step < warmup_steps_) return base_ * static_cast<double>(global_step + 1) / warmup_steps_;
    const int64_t t = global_step - warmup_steps_;
    if (cfg_.type == "step_decay") {
        const int64_t epoch = t / steps_per_epoch_;
        return base_ * std::pow(cfg_.decay_rate, static_cast<double>(epoch / std::max<int64_t>(1, cfg_.decay_epochs)));
    }
    if (cfg_.type == "exponential_decay") {
        double p = static_cast<double>(t) / std::max<int64_t>(1, cfg_.decay_steps);
        if (cfg_.staircase) p = std::floor(p);
        return base_ * std::pow(cfg_.decay_rate, p);
    }
    if (cfg_.type == "cosine") {
        const double span = static_cast<double>(std::max<int64_t>(1, total_steps_ - warmup_steps_));
        const double progress = std::min(1.0, static_cast<double>(t) / span);
        return cfg_.min_lr + (base_ - cfg_.min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
    }
    return base_;  // constant (config validation rejects unknown names)
}

}  // namespace gputrain::optim
