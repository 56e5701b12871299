// Learning-rate schedules: the rate for an optimizer step, from the step's
// position in training. Warmup (linear from 0) comes first, then the schedule.
// Warmup, step_decay and cosine count in epochs (the epoch and the step within
// it), so a run resumed with another batch size, and so another number of
// steps per epoch, stays where it was in its schedule; exponential_decay
// counts optimizer steps, as Keras' schedules do.
#pragma once

#include <cstdint>

#include "config/run_config.hpp"

namespace gputrain::optim {

class Schedule {
public:
    Schedule(const config::OptimizerConfig& cfg, int64_t steps_per_epoch, int64_t total_epochs);
    // The rate of step `step_in_epoch` of epoch `epoch` (both from 0), the
    // `global_step`-th optimizer step of the run (from 0, across epochs).
    double learning_rate(int64_t global_step, int64_t epoch, int64_t step_in_epoch) const;
    // The same for a run whose every epoch had `steps_per_epoch` steps.
    double learning_rate(int64_t global_step) const {
        return learning_rate(global_step, global_step / steps_per_epoch_, global_step % steps_per_epoch_);
    }

private:
    config::ScheduleConfig cfg_;
    double base_;
    int64_t steps_per_epoch_;
    // In steps of this run's epochs; doubles, since epochs x steps may pass int64 (epochs: 1e18).
    double total_steps_;
    double warmup_steps_;
};

}  // namespace gputrain::optim
