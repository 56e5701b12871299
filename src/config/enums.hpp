// The config's closed sets of names, each a scoped enum with its table
// (enum_table.hpp): the names in the order docs/config.md and error messages
// list them. The modules that implement them (optim/, nn/, train/, data/)
// switch on the enums.
#pragma once

#include <array>

#include "config/enum_table.hpp"

namespace gputrain::config {

// loss, loss.name
enum class LossKind {
    sparse_categorical_crossentropy,
    categorical_crossentropy,
    mean_squared_error,
    mean_absolute_error,
    huber
};
template <>
struct EnumTable<LossKind> {
    static constexpr const char* noun = "loss";
    static constexpr const char* plural = "losses";
    static constexpr std::array<EnumName<LossKind>, 5> entries{{
        {LossKind::sparse_categorical_crossentropy, "sparse_categorical_crossentropy"},
        {LossKind::categorical_crossentropy, "categorical_crossentropy"},
        {LossKind::mean_squared_error, "mean_squared_error"},
        {LossKind::mean_absolute_error, "mean_absolute_error"},
        {LossKind::huber, "huber"},
    }};
};
inline bool is_cross_entropy(LossKind k) {
    return k == LossKind::sparse_categorical_crossentropy || k == LossKind::categorical_crossentropy;
}
// Losses that only real-valued targets can have (mean_squared_error takes
// either: real targets, or class labels as one-hot vectors).
inline bool needs_real_targets(LossKind k) { return k == LossKind::mean_absolute_error || k == LossKind::huber; }

// optimizer.type
enum class OptimizerType { sgd, adam, adamw, rmsprop };
template <>
struct EnumTable<OptimizerType> {
    static constexpr const char* noun = "optimizer";
    static constexpr const char* plural = "optimizers";
    static constexpr std::array<EnumName<OptimizerType>, 4> entries{{
        {OptimizerType::sgd, "sgd"},
        {OptimizerType::adam, "adam"},
        {OptimizerType::adamw, "adamw"},
        {OptimizerType::rmsprop, "rmsprop"},
    }};
};

// optimizer.schedule.type
enum class ScheduleType { constant, step_decay, exponential_decay, cosine, linear, one_cycle };
template <>
struct EnumTable<ScheduleType> {
    static constexpr const char* noun = "schedule";
    static constexpr const char* plural = "schedules";
    static constexpr std::array<EnumName<ScheduleType>, 6> entries{{
        {ScheduleType::constant, "constant"},
        {ScheduleType::step_decay, "step_decay"},
        {ScheduleType::exponential_decay, "exponential_decay"},
        {ScheduleType::cosine, "cosine"},
        {ScheduleType::linear, "linear"},
        {ScheduleType::one_cycle, "one_cycle"},
    }};
};

// data.format
enum class DataFormat { idx, csv, synthetic, cifar10, cifar100, image_folder, npy, npz, text };
template <>
struct EnumTable<DataFormat> {
    static constexpr const char* noun = "data format";
    static constexpr const char* plural = "data formats";
    static constexpr std::array<EnumName<DataFormat>, 9> entries{{
        {DataFormat::idx, "idx"},
        {DataFormat::csv, "csv"},
        {DataFormat::synthetic, "synthetic"},
        {DataFormat::cifar10, "cifar10"},
        {DataFormat::cifar100, "cifar100"},
        {DataFormat::image_folder, "image_folder"},
        {DataFormat::npy, "npy"},
        {DataFormat::npz, "npz"},
        {DataFormat::text, "text"},
    }};
};

// data.tokenizer (format: text)
enum class Tokenizer { bytes, chars, sentencepiece };
template <>
struct EnumTable<Tokenizer> {
    static constexpr const char* noun = "tokenizer";
    static constexpr const char* plural = "tokenizers";
    static constexpr std::array<EnumName<Tokenizer>, 3> entries{{
        {Tokenizer::bytes, "bytes"},
        {Tokenizer::chars, "chars"},
        {Tokenizer::sentencepiece, "sentencepiece"},
    }};
};

// data.augment: the name of each step
enum class AugmentType { random_crop, random_flip, random_translate, cutout, random_rotation };
template <>
struct EnumTable<AugmentType> {
    static constexpr const char* noun = "augmentation";
    static constexpr const char* plural = "augmentations";
    static constexpr std::array<EnumName<AugmentType>, 5> entries{{
        {AugmentType::random_crop, "random_crop"},
        {AugmentType::random_flip, "random_flip"},
        {AugmentType::random_translate, "random_translate"},
        {AugmentType::cutout, "cutout"},
        {AugmentType::random_rotation, "random_rotation"},
    }};
};

// data.augment: random_crop / random_translate's mode: what lies past the image's edge
enum class FillMode { zero, reflect };
template <>
struct EnumTable<FillMode> {
    static constexpr const char* noun = "fill mode";
    static constexpr const char* plural = "fill modes";
    static constexpr std::array<EnumName<FillMode>, 2> entries{{
        {FillMode::zero, "zero"},
        {FillMode::reflect, "reflect"},
    }};
};

// data.augment: random_flip's mode (Keras' RandomFlip names)
enum class FlipMode { horizontal, vertical, both };
template <>
struct EnumTable<FlipMode> {
    static constexpr const char* noun = "flip mode";
    static constexpr const char* plural = "flip modes";
    static constexpr std::array<EnumName<FlipMode>, 3> entries{{
        {FlipMode::horizontal, "horizontal"},
        {FlipMode::vertical, "vertical"},
        {FlipMode::both, "horizontal_and_vertical"},
    }};
};

// data.resident: auto | true | false
enum class ResidentMode { automatic, on, off };
template <>
struct EnumTable<ResidentMode> {
    static constexpr const char* noun = "resident mode";
    static constexpr const char* plural = "resident modes";
    static constexpr std::array<EnumName<ResidentMode>, 3> entries{{
        {ResidentMode::automatic, "auto"},
        {ResidentMode::on, "true"},
        {ResidentMode::off, "false"},
    }};
};

// training.on_nan
enum class OnNan { stop, skip_step };
template <>
struct EnumTable<OnNan> {
    static constexpr const char* noun = "on_nan action";
    static constexpr const char* plural = "on_nan actions";
    static constexpr std::array<EnumName<OnNan>, 2> entries{{
        {OnNan::stop, "stop"},
        {OnNan::skip_step, "skip_step"},
    }};
};

// training.precision (train/ passes it on as the backend's Precision)
enum class Precision { fp32, tf32, bf16, fp16 };
template <>
struct EnumTable<Precision> {
    static constexpr const char* noun = "precision";
    static constexpr const char* plural = "precisions";
    static constexpr std::array<EnumName<Precision>, 4> entries{{
        {Precision::fp32, "fp32"},
        {Precision::tf32, "tf32"},
        {Precision::bf16, "bf16"},
        {Precision::fp16, "fp16"},
    }};
};

// strategy.type
enum class StrategyType { one_device, mirrored, multi_worker_mirrored };
template <>
struct EnumTable<StrategyType> {
    static constexpr const char* noun = "strategy";
    static constexpr const char* plural = "strategies";
    static constexpr std::array<EnumName<StrategyType>, 3> entries{{
        {StrategyType::one_device, "one_device"},
        {StrategyType::mirrored, "mirrored"},
        {StrategyType::multi_worker_mirrored, "multi_worker_mirrored"},
    }};
};

// strategy.communicator: auto | nccl | device
enum class CommunicatorKind { automatic, nccl, device };
template <>
struct EnumTable<CommunicatorKind> {
    static constexpr const char* noun = "communicator";
    static constexpr const char* plural = "communicators";
    static constexpr std::array<EnumName<CommunicatorKind>, 3> entries{{
        {CommunicatorKind::automatic, "auto"},
        {CommunicatorKind::nccl, "nccl"},
        {CommunicatorKind::device, "device"},
    }};
};

// checkpoint.monitor, early_stopping.monitor, reduce_lr_on_plateau.monitor
// accuracy, mae and mse are the run's metric (one of them: RunConfig::metric).
enum class Monitor { loss, accuracy, val_loss, val_accuracy, mae, val_mae, mse, val_mse };
template <>
struct EnumTable<Monitor> {
    static constexpr const char* noun = "monitored metric";
    static constexpr const char* plural = "monitored metrics";
    static constexpr std::array<EnumName<Monitor>, 8> entries{{
        {Monitor::loss, "loss"},
        {Monitor::accuracy, "accuracy"},
        {Monitor::val_loss, "val_loss"},
        {Monitor::val_accuracy, "val_accuracy"},
        {Monitor::mae, "mae"},
        {Monitor::val_mae, "val_mae"},
        {Monitor::mse, "mse"},
        {Monitor::val_mse, "val_mse"},
    }};
};
inline bool is_validation(Monitor m) {
    return m == Monitor::val_loss || m == Monitor::val_accuracy || m == Monitor::val_mae || m == Monitor::val_mse;
}
// The metric a monitor reads (accuracy, mae or mse), "" for the loss.
inline const char* monitored_metric_name(Monitor m) {
    switch (m) {
        case Monitor::accuracy: case Monitor::val_accuracy: return "accuracy";
        case Monitor::mae: case Monitor::val_mae: return "mae";
        case Monitor::mse: case Monitor::val_mse: return "mse";
        default: return "";
    }
}

// The `mode` of checkpoint, early_stopping and reduce_lr_on_plateau: min | max | auto
enum class MonitorMode { min, max, automatic };
template <>
struct EnumTable<MonitorMode> {
    static constexpr const char* noun = "mode";
    static constexpr const char* plural = "modes";
    static constexpr std::array<EnumName<MonitorMode>, 3> entries{{
        {MonitorMode::min, "min"},
        {MonitorMode::max, "max"},
        {MonitorMode::automatic, "auto"},
    }};
};

// logging.level
enum class LogLevel { trace, debug, info, warn, error };
template <>
struct EnumTable<LogLevel> {
    static constexpr const char* noun = "log level";
    static constexpr const char* plural = "log levels";
    static constexpr std::array<EnumName<LogLevel>, 5> entries{{
        {LogLevel::trace, "trace"},
        {LogLevel::debug, "debug"},
        {LogLevel::info, "info"},
        {LogLevel::warn, "warn"},
        {LogLevel::error, "error"},
    }};
};

// logging.progress: auto | bar | lines | none
enum class ProgressStyle { automatic, bar, lines, none };
template <>
struct EnumTable<ProgressStyle> {
    static constexpr const char* noun = "progress style";
    static constexpr const char* plural = "progress styles";
    static constexpr std::array<EnumName<ProgressStyle>, 4> entries{{
        {ProgressStyle::automatic, "auto"},
        {ProgressStyle::bar, "bar"},
        {ProgressStyle::lines, "lines"},
        {ProgressStyle::none, "none"},
    }};
};

}  // namespace gputrain::config
