// Learning-rate schedules: the rate for an optimizer step, from the step's
// position in training. Warmup (linear from 0) comes first, then the schedule.
#pragma once

#include <cstdint>

#include "config/run_config.hpp"

namespace gputrain::optim {

class Schedule {
public:
    Schedule(const config::OptimizerConfig& cfg, int64_t steps_per_epoch, int64_t total_epochs);
    // `global_step` counts optimizer steps from 0 across epochs.
    double learning_rate(int64_t global_step) const;

private:
    config::ScheduleConfig cfg_;
    double base_;
    int64_t steps_per_epoch_;
    int64_t total_steps_;
    int64_t warmup_steps_;
};

}  // namespace gputrain::optim
