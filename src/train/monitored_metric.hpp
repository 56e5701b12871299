// MonitoredMetric: the epoch metric a callback watches (checkpoint.monitor for
// best.safetensors, early_stopping.monitor), resolved against whether the run
// has validation data, with the direction that counts as better.
#pragma once

#include <string>

#include "train/metrics_file.hpp"

namespace gputrain::train {

struct MonitoredMetric {
    std::string name;       // "val_loss"; "loss" when a val_* metric has no validation data
    bool maximize = false;  // higher is better

    // `mode` min | max | auto (auto: max for accuracy, min for loss).
    static MonitoredMetric resolve(const std::string& monitor, const std::string& mode, bool has_validation);
    // "val_loss min": what a stored best was measured by.
    std::string describe() const { return name + (maximize ? " max" : " min"); }
    double value_of(const EpochRecord& record) const;
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
