#include "train/monitored_metric.hpp"

#include <cstdio>

namespace gputrain::train {

std::string shown_value(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

MonitoredMetric MonitoredMetric::resolve(const std::string& monitor, const std::string& mode, bool has_validation) {
    MonitoredMetric m;
    m.name = !has_validation && monitor.rfind("val_", 0) == 0 ? monitor.substr(4) : monitor;
    m.maximize = mode == "max" || (mode == "auto" && m.name.find("accuracy") != std::string::npos);
    return m;
}

std::string MonitoredMetric::no_improvement(const WatchedBest& watched, double min_delta) const {
    const std::string epochs = std::to_string(watched.wait) + (watched.wait == 1 ? " epoch" : " epochs");
    if (!watched.has_best) return name + " was NaN for " + epochs;
    return name + " did not improve on " + shown_value(watched.best) + " (epoch " + std::to_string(watched.best_epoch) +
           ")" + (min_delta > 0 ? " by more than " + shown_value(min_delta) : std::string()) + " for " + epochs;
}

double MonitoredMetric::value_of(const EpochRecord& record) const {
    if (name == "accuracy") return record.accuracy;
    if (name == "val_accuracy") return record.val_accuracy;
    if (name == "val_loss") return record.val_loss;
    return record.loss;
}

}  // namespace gputrain::train
