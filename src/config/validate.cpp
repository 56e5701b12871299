#include "config/validate.hpp"

#include <algorithm>
#include <filesystem>

#include "config/scalar_text.hpp"

namespace gputrain::config {

namespace {

// A key that only some kinds use may be left at its default by the others
// (the resolved config lists every key); any other value is an error, as an
// ignored key would be.
void require_user(const ConfigSource& source, bool set, const std::string& path, const std::string& users,
                  const std::string& actual, const std::string& hint) {
    if (set) source.fail_at(path, "only used by " + users + ", not " + actual, hint);
}

void check_optimizer(const OptimizerConfig& o, const ConfigSource& source) {
    const OptimizerConfig d;
    const std::string type = name_of(o.type);
    const bool sgd = o.type == OptimizerType::sgd;
    if (o.type != OptimizerType::adamw && o.weight_decay != 0)
        source.fail_at("optimizer.weight_decay", "must be 0 for " + type + ", got " + format_number(o.weight_decay),
                       "use type: adamw for weight decay");
    const bool rmsprop = o.type == OptimizerType::rmsprop;
    const std::string sgd_hint = "remove it or use type: sgd";
    require_user(source, !sgd && !rmsprop && o.momentum != d.momentum, "optimizer.momentum", "sgd and rmsprop", type,
                 "remove it or use type: sgd or rmsprop");
    const std::string rmsprop_hint = "remove it or use type: rmsprop";
    require_user(source, !rmsprop && o.rho != d.rho, "optimizer.rho", "rmsprop", type, rmsprop_hint);
    require_user(source, !rmsprop && o.centered, "optimizer.centered", "rmsprop", type, rmsprop_hint);
    require_user(source, !sgd && o.nesterov, "optimizer.nesterov", "sgd", type, sgd_hint);
    if (o.nesterov && o.momentum == 0)
        source.fail_at("optimizer.nesterov", "needs momentum > 0", "set optimizer.momentum, e.g. 0.9");
    const std::string adam_users = "adam and adamw", adam_hint = "remove it or use type: adam";
    require_user(source, sgd && o.beta1 != d.beta1, "optimizer.beta1", adam_users, type, adam_hint);
    require_user(source, sgd && o.beta2 != d.beta2, "optimizer.beta2", adam_users, type, adam_hint);
    require_user(source, sgd && o.epsilon != d.epsilon, "optimizer.epsilon", "adam, adamw and rmsprop", type,
                 "remove it or use type: adam or rmsprop");
    if (o.schedule.warmup_epochs > 0 && o.schedule.warmup_steps > 0)
        source.fail_at("optimizer.schedule.warmup_steps", "is set, and so is warmup_epochs",
                       "warm up over epochs or over steps: remove one");

    const ScheduleConfig& s = o.schedule;
    const ScheduleConfig ds;
    const std::string actual = std::string(name_of(s.type)) + " schedule";
    const std::string hint = "remove it or change optimizer.schedule.type";
    const bool step = s.type == ScheduleType::step_decay, exponential = s.type == ScheduleType::exponential_decay;
    const bool cosine = s.type == ScheduleType::cosine;
    require_user(source, !step && !exponential && s.decay_rate != ds.decay_rate, "optimizer.schedule.decay_rate",
                 "step_decay and exponential_decay", actual, hint);
    require_user(source, !step && s.decay_epochs != ds.decay_epochs, "optimizer.schedule.decay_epochs",
                 "step_decay", actual, hint);
    require_user(source, !exponential && s.decay_steps != ds.decay_steps, "optimizer.schedule.decay_steps",
                 "exponential_decay", actual, hint);
    require_user(source, !exponential && s.staircase, "optimizer.schedule.staircase", "exponential_decay", actual, hint);
    const bool linear = s.type == ScheduleType::linear, cycle = s.type == ScheduleType::one_cycle;
    require_user(source, !cosine && !linear && !cycle && s.min_lr != ds.min_lr, "optimizer.schedule.min_lr",
                 "cosine, linear and one_cycle", actual, hint);
    if ((cosine || linear) && s.min_lr >= o.learning_rate)
        source.fail_at("optimizer.schedule.min_lr",
                       "must be below optimizer.learning_rate (" + format_number(o.learning_rate) + "), got " +
                           format_number(s.min_lr));
}

void check_data(DataConfig& data, const ConfigSource& source) {
    const bool synthetic = data.dataset == "synthetic" || data.format == DataFormat::synthetic;
    if (synthetic) {
        if (data.format != DataFormat::synthetic && source.given("data.format"))
            source.fail_at("data.format",
                           "dataset synthetic needs format synthetic, got " + std::string(name_of(data.format)),
                           "remove data.format");
        if (!data.dataset.empty() && data.dataset != "synthetic")
            source.fail_at("data.dataset", "not used with format synthetic",
                           "remove it, or remove format: synthetic to read '" + data.dataset + "'");
        if (!data.path.empty())
            source.fail_at("data.path", "not used with synthetic data", "remove it");
        if (data.synthetic_classes < 2)
            source.fail_at("data.synthetic.classes", "expected at least 2 classes, got " +
                           std::to_string(data.synthetic_classes));
        data.format = DataFormat::synthetic;
        return;
    }
    if (!data.dataset.empty() && !data.path.empty())
        source.fail_at("data.path", "give data.dataset or data.path, not both", "remove one");
    // dataset: cifar10 (or cifar100) reads the CIFAR binary files unless data.format says otherwise.
    if (!source.given("data.format") && (data.dataset == "cifar10" || data.dataset == "cifar100"))
        data.format = data.dataset == "cifar10" ? DataFormat::cifar10 : DataFormat::cifar100;
    if (data.dataset.empty() && data.path.empty())
        source.fail_at("data", "no data set given",
                       "give data.dataset: NAME (e.g. fashion-mnist), data.path: DIR or dataset: synthetic");
    const DataConfig d;
    if (data.format != DataFormat::image_folder) {
        const std::string what = std::string(name_of(data.format)) + " data";
        require_user(source, data.crop_to_aspect_ratio, "data.crop_to_aspect_ratio", "format image_folder", what,
                     "remove it");
        require_user(source, data.skip_bad_files, "data.skip_bad_files", "format image_folder", what, "remove it");
        require_user(source, !data.cache_dir.empty(), "data.cache_dir", "format image_folder", what, "remove it");
    }
    if (data.format != DataFormat::csv)
        require_user(source, !data.target_columns.empty(), "data.target_columns", "format csv",
                     std::string(name_of(data.format)) + " data",
                     "remove it (NPY/NPZ: a float y_train array holds real-valued targets)");
    const std::string hint = "remove it or use dataset: synthetic";
    const std::string actual = std::string(name_of(data.format)) + " data";
    require_user(source, data.synthetic_samples != d.synthetic_samples, "data.synthetic.samples", "synthetic data",
                 actual, hint);
    require_user(source, data.synthetic_classes != d.synthetic_classes, "data.synthetic.classes", "synthetic data",
                 actual, hint);
    require_user(source, data.synthetic_seed != d.synthetic_seed, "data.synthetic.seed", "synthetic data", actual,
                 hint);
}

// data.augment works on images, and each step's sizes must fit them.
void check_augment(const DataConfig& data, const Shape& input, const ConfigSource& source) {
    // data.normalize: one mean and std per channel (the last axis of [H, W, C]), or one for all.
    const size_t channels = input.size() == 3 ? static_cast<size_t>(input[2]) : 1;
    const size_t given = data.normalize_mean.size();
    if (given > 1 && given != channels)
        source.fail_at("data.normalize",
                       std::to_string(given) + " mean/std values for samples of shape " + shape_to_string(input, false) +
                           " with " + std::to_string(channels) + " channel" + (channels == 1 ? "" : "s") +
                           " (the last axis of [height, width, channels], else 1)",
                       "give " + (channels == 1 ? std::string("1") : "1 or " + std::to_string(channels)));
    if (data.augment.empty()) return;
    if (input.size() != 2 && input.size() != 3)
        source.fail_at("data.augment", "works on images: model.input_shape is " + shape_to_string(input, false),
                       "give the images' shape, [height, width, channels] (e.g. [28, 28, 1]), or remove data.augment");
    const int64_t height = input[0], width = input[1], side = std::min(height, width);
    for (size_t i = 0; i < data.augment.size(); ++i) {
        const AugmentConfig& a = data.augment[i];
        const std::string path = "data.augment[" + std::to_string(i) + "]." + name_of(a.type);
        const std::string image = std::to_string(height) + "x" + std::to_string(width);
        if (a.type == AugmentType::random_crop && a.padding >= side)
            source.fail(a.place, path + ".padding",
                        "padding " + std::to_string(a.padding) + " is not smaller than the " + image + " images",
                        "give at most " + std::to_string(side - 1) + " (4 is usual for 28x28 or 32x32 images)");
        if (a.type == AugmentType::cutout && a.size > side)
            source.fail(a.place, path + ".size",
                        "a square of " + std::to_string(a.size) + " pixels is larger than the " + image + " images",
                        "give at most " + std::to_string(side) + " (about half the side is usual)");
    }
}

void check_strategy(const StrategyConfig& s, int64_t batch_size, const ConfigSource& source) {
    const bool gpus = s.devices != "all" && s.devices != "cpu";
    const size_t listed = gpus ? std::count(s.devices.begin(), s.devices.end(), ',') + 1 : 0;
    const bool one_device = s.type == StrategyType::one_device;
    if (one_device && listed > 1)
        source.fail_at("strategy.devices", "one_device uses one device, got " + std::to_string(listed) + " (" +
                       s.devices + ")", "use type: mirrored or list one GPU");
    if (one_device && s.replicas > 1)
        source.fail_at("strategy.replicas", "one_device runs one replica, got " + std::to_string(s.replicas),
                       "use type: mirrored");
    if (gpus && s.replicas > 0)
        source.fail_at("strategy.replicas", "only used by CPU replicas, not GPUs " + s.devices,
                       "remove it or use devices: cpu");
    if (s.replicas > kMaxReplicas)
        source.fail_at("strategy.replicas", "at most " + std::to_string(kMaxReplicas) + " replicas, got " +
                       std::to_string(s.replicas), "use fewer; more replicas than CPU cores are slower anyway");
    if (s.replicas > batch_size)
        source.fail_at("strategy.replicas", std::to_string(s.replicas) + " replicas for a global batch of " +
                       std::to_string(batch_size) + " leave some without samples",
                       "use at most training.batch_size replicas");
    if (s.replicas_per_gpu > kMaxReplicas)
        source.fail_at("strategy.replicas_per_gpu", "at most " + std::to_string(kMaxReplicas) + ", got " +
                       std::to_string(s.replicas_per_gpu));
}

}  // namespace

namespace {

// A path as one spelling: "a/./b/" and "a/b" alike.
std::filesystem::path plain_path(const std::filesystem::path& p) {
    std::string text = p.lexically_normal().string();
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    return text;
}

}  // namespace

void validate(RunConfig& config, const ConfigSource& source) {
    if (config.loss.from_logits && !is_cross_entropy(config.loss.name))
        source.fail_at("loss.from_logits",
                       "only used by the crossentropy losses, not " + std::string(name_of(config.loss.name)),
                       "remove it");
    const std::string metric = config.metric();
    if (is_cross_entropy(config.loss.name) && metric != "accuracy")
        source.fail_at("metrics", "'" + metric + "' measures real-valued targets, and " +
                                      std::string(name_of(config.loss.name)) + " trains class labels",
                       "use metrics: [accuracy] with class labels, or for real-valued targets a loss of them "
                       "(mean_squared_error, mean_absolute_error, huber)");
    if (needs_real_targets(config.loss.name) && metric == "accuracy")
        source.fail_at("metrics", "accuracy counts class labels, and " + std::string(name_of(config.loss.name)) +
                                      " trains real-valued targets",
                       "use metrics: [mae] or [mse]");
    // Text: a block of token ids in, a next-token label at every position.
    if (config.data.format == DataFormat::text && config.data.dataset != "synthetic") {
        if (!is_cross_entropy(config.loss.name))
            source.fail_at("loss", std::string(name_of(config.loss.name)) +
                                       " does not train next-token labels (format text)",
                           "use sparse_categorical_crossentropy");
        if (config.model.input_shape.size() != 1)
            source.fail_at("model.input_shape",
                           "format text takes a block of token ids, [positions], not " +
                               std::to_string(config.model.input_shape.size()) + " axes",
                           "e.g. input_shape: [256]");
        // A stride of the window's length is the default: written out or left out, one config (and digest).
        if (config.model.input_shape.size() == 1 && config.data.sequence_stride == config.model.input_shape[0])
            config.data.sequence_stride = 0;
    }
    check_optimizer(config.optimizer, source);
    check_data(config.data, source);
    check_augment(config.data, config.model.input_shape, source);
    check_strategy(config.strategy, config.training.batch_size, source);
    // metrics_file is relative to the checkpoint folder, the event files go to RUN_DIR/tensorboard.
    const std::string& checkpoints = config.checkpoint.dir.empty() ? config.run_dir : config.checkpoint.dir;
    if (config.logging.tensorboard && !config.logging.metrics_file.empty() &&
        plain_path(std::filesystem::path(checkpoints) / config.logging.metrics_file) ==
            plain_path(std::filesystem::path(config.run_dir) / "tensorboard"))
        source.fail_at("logging.metrics_file",
                       "'" + config.logging.metrics_file + "' is the folder logging.tensorboard writes its event files in",
                       "give another name, e.g. metrics_file: metrics.csv");
    const auto& metrics = config.metrics;
    const auto check_monitor = [&](Monitor monitor, const char* key) {
        const std::string wanted = monitored_metric_name(monitor);
        if (wanted.empty() || std::find(metrics.begin(), metrics.end(), wanted) != metrics.end()) return;
        // The run has one metric: a monitor of another names that one (or the loss).
        const std::string listed = config.metric();
        const bool other = std::find(metrics.begin(), metrics.end(), listed) != metrics.end();
        source.fail_at(key, "'" + std::string(name_of(monitor)) + "' needs the " + wanted + " metric",
                       other ? "monitor val_" + listed + " (the metric listed) or val_loss"
                             : "add " + wanted + " to metrics or monitor val_loss");
    };
    check_monitor(config.checkpoint.monitor, "checkpoint.monitor");
    if (config.early_stopping.enabled) check_monitor(config.early_stopping.monitor, "early_stopping.monitor");
    if (config.reduce_lr_on_plateau.enabled) {
        check_monitor(config.reduce_lr_on_plateau.monitor, "reduce_lr_on_plateau.monitor");
        // As Keras: it sets the rate, which another schedule also sets.
        if (config.optimizer.schedule.type != ScheduleType::constant)
            source.fail_at("reduce_lr_on_plateau", "works on a constant learning rate, and optimizer.schedule.type is " +
                                                       std::string(name_of(config.optimizer.schedule.type)),
                           "use one of the two (optimizer.schedule.warmup_epochs may stay)");
    }
}

}  // namespace gputrain::config
