#include "train/monitored_metric.hpp"

namespace gputrain::train {

MonitoredMetric MonitoredMetric::resolve(const std::string& monitor, const std::string& mode, bool has_validation) {
    MonitoredMetric m;
    m.name = !has_validation && monitor.rfind("val_", 0) == 0 ? monitor.substr(4) : monitor;
    m.maximize = mode == "max" || (mode == "auto" && m.name.find("accuracy") != std::string::npos);
    return m;
}

double MonitoredMetric::value_of(const EpochRecord& record) const {
    if (name == "accuracy") return record.accuracy;
    if (name == "val_accuracy") return record.val_accuracy;
    if (name == "val_loss") return record.val_loss;
    return record.loss;
}

}  // namespace gputrain::train
