#include "optim/schedule.hpp"

#include <algorithm>
#include <cmath>

namespace gputrain::optim {

Schedule::Schedule(const config::OptimizerConfig& cfg, int64_t steps_per_epoch, int64_t total_epochs)
    : cfg_(cfg.schedule),
      base_(cfg.learning_rate),
      steps_per_epoch_(std::max<int64_t>(1, steps_per_epoch)),
      total_steps_(static_cast<double>(steps_per_epoch_) * static_cast<double>(std::max<int64_t>(1, total_epochs))),
      warmup_steps_(static_cast<double>(cfg.schedule.warmup_epochs) * static_cast<double>(steps_per_epoch_)) {}

double Schedule::learning_rate(int64_t global_step, int64_t epoch, int64_t step_in_epoch) const {
    // Where the step is, in steps of this run's epochs.
    const double position = static_cast<double>(epoch) * static_cast<double>(steps_per_epoch_) +
                            static_cast<double>(step_in_epoch);
    if (epoch < cfg_.warmup_epochs) return base_ * (position + 1.0) / warmup_steps_;
    if (cfg_.type == "step_decay") {
        const int64_t decays = (epoch - cfg_.warmup_epochs) / std::max<int64_t>(1, cfg_.decay_epochs);
        return base_ * std::pow(cfg_.decay_rate, static_cast<double>(decays));
    }
    if (cfg_.type == "exponential_decay") {
        // Optimizer steps since warmup: the run's own count (a resume with
        // another batch size may have made warmup's steps fewer than now).
        double p = std::max(0.0, static_cast<double>(global_step) - warmup_steps_) /
                   static_cast<double>(std::max<int64_t>(1, cfg_.decay_steps));
        if (cfg_.staircase) p = std::floor(p);
        return base_ * std::pow(cfg_.decay_rate, p);
    }
    if (cfg_.type == "cosine") {
        const double span = std::max(1.0, total_steps_ - warmup_steps_);
        const double progress = std::min(1.0, (position - warmup_steps_) / span);
        return cfg_.min_lr + (base_ - cfg_.min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
    }
    return base_;  // constant (config validation rejects unknown names)
}

}  // namespace gputrain::optim
