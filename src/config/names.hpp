// The names a config may use for each kind of choice, in the order
// docs/config.md and error messages list them. The modules that implement them
// (optim/, nn/, train/, data/) must accept exactly these names.
#pragma once

#include <string>
#include <vector>

namespace gputrain::config {

struct NameSet {
    std::string noun;                 // "optimizer": "unknown optimizer 'x'"
    std::string plural;               // "optimizers": "known optimizers: ..."
    std::vector<std::string> names;
};

inline const NameSet kOptimizerTypes{"optimizer", "optimizers", {"sgd", "adam", "adamw"}};
inline const NameSet kLossNames{"loss", "losses",
    {"sparse_categorical_crossentropy", "categorical_crossentropy", "mean_squared_error"}};
inline const NameSet kMetricNames{"metric", "metrics", {"accuracy", "loss"}};
inline const NameSet kScheduleTypes{"schedule", "schedules",
    {"constant", "step_decay", "exponential_decay", "cosine"}};
inline const NameSet kDataFormats{"data format", "data formats", {"idx", "csv", "synthetic"}};
inline const NameSet kResidentModes{"resident mode", "resident modes", {"auto", "true", "false"}};
inline const NameSet kStrategyTypes{"strategy", "strategies", {"one_device", "mirrored", "multi_worker_mirrored"}};
inline const NameSet kCommunicators{"communicator", "communicators", {"auto", "nccl", "device"}};
inline const NameSet kMonitorNames{"monitored metric", "monitored metrics",
    {"loss", "accuracy", "val_loss", "val_accuracy"}};
inline const NameSet kMonitorModes{"mode", "modes", {"min", "max", "auto"}};
inline const NameSet kLogLevels{"log level", "log levels", {"trace", "debug", "info", "warn", "error"}};
inline const NameSet kProgressStyles{"progress style", "progress styles", {"auto", "bar", "lines", "none"}};
inline const NameSet kOnNanActions{"on_nan action", "on_nan actions", {"stop", "skip_step"}};
inline const NameSet kPrecisions{"precision", "precisions", {"fp32", "tf32", "bf16", "fp16"}};

}  // namespace gputrain::config
