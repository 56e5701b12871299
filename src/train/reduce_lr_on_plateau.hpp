// ReduceLrOnPlateau: Keras' ReduceLROnPlateau callback (config section
// reduce_lr_on_plateau). After each epoch: during a cooldown the count of
// epochs without improvement stays 0; an epoch improves when its monitored
// value beats the best by more than min_delta; once `patience` epochs in a row
// have not (outside a cooldown), the learning rate is multiplied by `factor`,
// not below min_lr (nothing when it is at min_lr already), and `cooldown`
// epochs begin. The rate and the count travel in checkpoints.
#pragma once

#include <cstdint>
#include <string>

#include "config/run_config.hpp"
#include "train/callback.hpp"
#include "train/metrics_file.hpp"
#include "train/monitored_metric.hpp"

namespace gputrain::train {

// `wait` counts epochs outside a cooldown only.
struct PlateauState : WatchedBest {
    int64_t cooldown_left = 0;
    double learning_rate = 0;  // the rate it set; 0 = optimizer.learning_rate (not reduced yet)
};

class ReduceLrOnPlateau {
public:
    // `base_rate`: optimizer.learning_rate.
    ReduceLrOnPlateau(const config::ReduceLrOnPlateauConfig& cfg, bool has_validation, double base_rate);
    bool enabled() const { return cfg_.enabled; }
    double base_rate() const { return base_rate_; }  // optimizer.learning_rate
    // The base rate the schedule (constant, maybe warmup) now starts from.
    double learning_rate(const PlateauState& state) const;

    // A restored state: kept when it watched this metric; another metric's
    // count starts over (the rate it set stays); off, it is dropped and the
    // rate is optimizer.learning_rate again. Returns what happened ("" when kept).
    std::string adopt(PlateauState& state) const;
    // Epoch `record.epoch` has ended: updates the state; when it lowered the
    // rate, says so ("val_loss did not improve on 0.31 (epoch 4) for 3 epochs;
    // learning rate 0.001 -> 0.0001"), else "".
    std::string after_epoch(PlateauState& state, const EpochRecord& record) const;

private:
    config::ReduceLrOnPlateauConfig cfg_;
    MonitoredMetric metric_;
    double base_rate_;
};

// The rule as the trainer runs it, with its state (metadata "reduce_lr_*").
class ReduceLrCallback : public Callback {
public:
    ReduceLrCallback(const config::ReduceLrOnPlateauConfig& cfg, bool has_validation, double base_rate)
        : rule_(cfg, has_validation, base_rate) {}
    // The base rate the schedule starts from now.
    double learning_rate() const { return rule_.learning_rate(state_); }

    std::vector<std::string> restore(const MetadataReader& metadata) override;
    void after_epoch(const EpochRecord& record, EpochDecision& decision) override;
    void save(Metadata& metadata) const override;

private:
    ReduceLrOnPlateau rule_;
    PlateauState state_;
};

}  // namespace gputrain::train
