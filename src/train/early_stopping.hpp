// EarlyStopping: Keras' EarlyStopping callback (config section early_stopping).
// After each epoch it compares the monitored metric with the best so far: an
// epoch improves when it beats that best by more than min_delta; `patience`
// epochs in a row that do not end training (patience 0: the first). Epochs up
// to start_from_epoch are not watched. Its state travels in checkpoints, so a
// --resume goes on counting where the run stopped, and a resume of a run that
// stopped early trains nothing (unless patience was raised).
#pragma once

#include <cstdint>
#include <string>

#include "config/run_config.hpp"
#include "train/callback.hpp"
#include "train/metrics_file.hpp"
#include "train/monitored_metric.hpp"

namespace gputrain::train {

struct EarlyStoppingState : WatchedBest {
    // The rule's other settings the count was made with: another value
    // (on a resume) starts it over.
    double min_delta = 0;
    int64_t start_from_epoch = 0;
};

class EarlyStopping {
public:
    EarlyStopping(const config::EarlyStoppingConfig& cfg, bool has_validation);
    bool enabled() const { return cfg_.enabled; }
    const MonitoredMetric& metric() const { return metric_; }

    // A state restored from a checkpoint that watched another metric (monitor
    // or mode changed, validation added or removed) or counted with another
    // min_delta or start_from_epoch does not hold for this run's rule: starts
    // it over and returns why ("" when kept).
    std::string adopt(EarlyStoppingState& state) const;
    // Epoch `record.epoch` has ended: updates the state; whether training stops after it.
    bool after_epoch(EarlyStoppingState& state, const EpochRecord& record) const;
    // Whether a restored state after `epochs_done` epochs already stops the
    // run (it stopped early, or patience was lowered since).
    bool stops(const EarlyStoppingState& state, int64_t epochs_done) const;
    // "val_loss did not improve on 0.3127 (epoch 4) by more than 0 for 3 epochs (early_stopping.patience: 3)"
    std::string reason(const EarlyStoppingState& state) const;
    // Whether `of` is a metric this rule could have written ("val_loss min"):
    // a checkpoint's text is checked before it is shown.
    static bool valid_of(const std::string& of);

private:
    config::EarlyStoppingConfig cfg_;
    MonitoredMetric metric_;
};

// The rule as the trainer runs it, with its state (metadata "early_stopping_*";
// none while it has watched nothing).
class EarlyStoppingCallback : public Callback {
public:
    EarlyStoppingCallback(const config::EarlyStoppingConfig& cfg, bool has_validation) : rule_(cfg, has_validation) {}
    const EarlyStopping& rule() const { return rule_; }
    const EarlyStoppingState& state() const { return state_; }
    // Training is over after `epochs_done` epochs (a resumed run that stopped early).
    bool stops(int64_t epochs_done) const { return rule_.stops(state_, epochs_done); }
    std::string reason() const { return rule_.reason(state_); }

    std::vector<std::string> restore(const MetadataReader& metadata) override;
    void after_epoch(const EpochRecord& record, EpochDecision& decision) override;
    void save(Metadata& metadata) const override;

private:
    EarlyStopping rule_;
    EarlyStoppingState state_;
};

}  // namespace gputrain::train
