// MonitoredMetric: the epoch metric a callback watches (checkpoint.monitor for
// best.safetensors, early_stopping.monitor), resolved against whether the run
// has validation data, with the direction that counts as better.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "config/run_config.hpp"
#include "train/metrics_file.hpp"

namespace gputrain::train {

// What a callback that watches a metric (early_stopping, reduce_lr_on_plateau)
// keeps between epochs, and in checkpoints.
struct WatchedBest {
    std::string of;          // what `best` measures ("val_loss min"); "" = nothing watched yet
    bool has_best = false;   // a NaN is never a best
    double best = 0;
    int64_t best_epoch = 0;  // 1-based
    int64_t wait = 0;        // epochs in a row, since the best, that did not improve on it

    // Epoch `epoch`'s `value` becomes the best (and the count restarts) when
    // it is not NaN and there is no best yet or it `beats_best`; whether it did.
    bool offer(double value, int64_t epoch, bool beats_best) {
        if (std::isnan(value) || (has_best && !beats_best)) return false;
        has_best = true;
        best = value;
        best_epoch = epoch;
        wait = 0;
        return true;
    }
};

// A metric value for messages: "0.0646884".
std::string shown_value(double value);

struct MonitoredMetric {
    config::Monitor metric = config::Monitor::loss;  // val_loss; loss when a val_* metric has no validation data
    bool maximize = false;                            // higher is better

    // `mode` min | max | auto (auto: max for accuracy, min for loss).
    static MonitoredMetric resolve(config::Monitor monitor, config::MonitorMode mode, bool has_validation);
    // "val_loss"
    std::string name() const { return config::name_of(metric); }
    // "val_loss min": what a stored best was measured by.
    std::string describe() const { return name() + (maximize ? " max" : " min"); }
    double value_of(const EpochRecord& record) const;
    // Why `watched` counts its epochs: "val_loss did not improve on 0.4
    // (epoch 2) by more than 0.01 for 2 epochs", or "val_loss was NaN for 2 epochs".
    std::string no_improvement(const WatchedBest& watched, double min_delta) const;
    // Whether `value` beats `best` by more than `min_delta`. NaN beats nothing
    // and is beaten by nothing.
    bool beats(double value, double best, double min_delta = 0) const {
        return maximize ? value - min_delta > best : value + min_delta < best;
    }
    // The same with min_delta moving the best instead, as Keras'
    // ReduceLROnPlateau writes it (value > best + min_delta): the two differ
    // in the rounding of an exact tie (an accuracy of 13/60 against 10/60 + 0.05).
    bool beats_moved_best(double value, double best, double min_delta) const {
        return maximize ? value > best + min_delta : value < best - min_delta;
    }
};

}  // namespace gputrain::train
