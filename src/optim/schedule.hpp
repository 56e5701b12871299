// Learning-rate schedules: the rate for an optimizer step, from the step's
// position in training. Warmup (linear from 0) comes first, then the schedule.
// Warmup, step_decay and cosine count in epochs (the epoch and the step within
// it), so a run resumed with another batch size, and so another number of
// steps per epoch, stays where it was in its schedule; exponential_decay
// counts optimizer steps, as Keras' schedules do, from the step where warmup
// ended (which the epochs' step counts give, whatever batch each run had).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace gputrain::optim {

// Steps per epoch from an epoch on, as the runs of a training trained them:
// {{0, 1875}, {3, 938}} for a run resumed after epoch 3 with twice the batch.
struct EpochSteps {
    int64_t from_epoch;
    int64_t steps;
};
using EpochStepsHistory = std::vector<EpochSteps>;

// The optimizer steps before epoch `epoch` (from 0): the global step its first
// step has. Epochs past the last entry have its steps. Double: epochs x steps may pass int64.
double steps_before_epoch(const EpochStepsHistory& history, int64_t epoch);

// `history` with epochs from `epoch` on at `steps` a epoch (a resume with another batch).
EpochStepsHistory continued_at(EpochStepsHistory history, int64_t epoch, int64_t steps);

// "0:1875,3:938" and back; parse_epoch_steps returns "" and fills `out`, or
// says what is wrong (entries not "epoch:steps", epochs not rising from 0, steps < 1).
std::string format_epoch_steps(const EpochStepsHistory& history);
std::string parse_epoch_steps(const std::string& text, EpochStepsHistory& out);

class Schedule {
public:
    // `history`: the steps per epoch of the training's epochs, this run's
    // included (empty: every epoch has `steps_per_epoch`); it places warmup's end.
    Schedule(const config::OptimizerConfig& cfg, int64_t steps_per_epoch, int64_t total_epochs,
             const EpochStepsHistory& history = {});
    // The rate of step `step_in_epoch` of epoch `epoch` (both from 0), the
    // `global_step`-th optimizer step of the run (from 0, across epochs).
    double learning_rate(int64_t global_step, int64_t epoch, int64_t step_in_epoch) const;
    // The same for a run whose every epoch had `steps_per_epoch` steps.
    double learning_rate(int64_t global_step) const {
        return learning_rate(global_step, global_step / steps_per_epoch_, global_step % steps_per_epoch_);
    }
    // one_cycle with cycle_momentum: the momentum of that step (PyTorch's
    // OneCycleLR: max_momentum down to base_momentum while the rate rises, back
    // up while it anneals, cosine both ways); -1 without cycling (the
    // optimizer's own).
    double momentum(int64_t epoch, int64_t step_in_epoch) const;
    double momentum(int64_t global_step) const {
        return momentum(global_step / steps_per_epoch_, global_step % steps_per_epoch_);
    }

private:
    config::ScheduleConfig cfg_;
    double base_;
    int64_t steps_per_epoch_;
    // In steps of this run's epochs; doubles, since epochs x steps may pass int64 (epochs: 1e18).
    double total_steps_;
    double warmup_steps_;
    // The global step where warmup ended (or ends): exponential_decay's start.
    double decay_start_;
};

}  // namespace gputrain::optim
