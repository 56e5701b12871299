#include "train/monitored_metric.hpp"

#include <cstdio>

namespace gputrain::train {

std::string shown_value(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

MonitoredMetric MonitoredMetric::resolve(config::Monitor monitor, config::MonitorMode mode, bool has_validation) {
    using config::Monitor;
    MonitoredMetric m;
    m.metric = monitor;
    if (!has_validation) {
        if (monitor == Monitor::val_loss) m.metric = Monitor::loss;
        if (monitor == Monitor::val_accuracy) m.metric = Monitor::accuracy;
        if (monitor == Monitor::val_mae) m.metric = Monitor::mae;
        if (monitor == Monitor::val_mse) m.metric = Monitor::mse;
    }
    const bool accuracy = m.metric == Monitor::accuracy || m.metric == Monitor::val_accuracy;
    switch (mode) {
        case config::MonitorMode::min: m.maximize = false; break;
        case config::MonitorMode::max: m.maximize = true; break;
        case config::MonitorMode::automatic: m.maximize = accuracy; break;
    }
    return m;
}

std::string MonitoredMetric::no_improvement(const WatchedBest& watched, double min_delta) const {
    const std::string epochs = std::to_string(watched.wait) + (watched.wait == 1 ? " epoch" : " epochs");
    if (!watched.has_best) return name() + " was NaN for " + epochs;
    return name() + " did not improve on " + shown_value(watched.best) + " (epoch " +
           std::to_string(watched.best_epoch) + ")" +
           (min_delta > 0 ? " by more than " + shown_value(min_delta) : std::string()) + " for " + epochs;
}

double MonitoredMetric::value_of(const EpochRecord& record) const {
    switch (metric) {
        case config::Monitor::loss: return record.loss;
        case config::Monitor::accuracy:
        case config::Monitor::mae:
        case config::Monitor::mse: return record.metric;
        case config::Monitor::val_loss: return record.val_loss;
        case config::Monitor::val_accuracy:
        case config::Monitor::val_mae:
        case config::Monitor::val_mse: return record.val_metric;
    }
    return record.loss;
}

}  // namespace gputrain::train
