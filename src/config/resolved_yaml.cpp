#include "config/resolved_yaml.hpp"

#include <cstdint>
#include <cstdio>

#include <yaml-cpp/yaml.h>

#include "config/scalar_text.hpp"

namespace gputrain::config {

namespace {

class ConfigEmitter {
public:
    // with_epochs false: the text the digest is taken of. It also leaves out
    // the keys that change how fast training runs, never what it computes
    // (strategy.bucket_mb, data.resident, training.cuda_graphs,
    // training.fused_kernels, training.cast_gemm_inputs, training.gemm_epilogues,
    // training.deterministic: the last three move results by a rounding, as
    // another kernel would), so a checkpoint resumes under other values
    // without a warning.
    std::string emit(const RunConfig& c, bool with_epochs) {
        full_ = with_epochs;
        out_ << YAML::BeginMap;
        key("run_dir") << c.run_dir;
        emit_model(c.model);
        key("loss") << YAML::BeginMap;
        key("name") << name_of(c.loss.name);
        key("from_logits") << c.loss.from_logits;
        if (c.loss.name == LossKind::huber) number("delta", c.loss.delta);
        if (c.loss.label_smoothing > 0) number("label_smoothing", c.loss.label_smoothing);
        out_ << YAML::EndMap;
        key("metrics") << YAML::Flow << c.metrics;
        emit_optimizer(c.optimizer);
        emit_data(c.data);
        key("training") << YAML::BeginMap;
        if (with_epochs) key("epochs") << c.training.epochs;
        key("batch_size") << c.training.batch_size;
        key("shuffle") << c.training.shuffle;
        key("seed") << c.training.seed;
        key("on_nan") << name_of(c.training.on_nan);
        key("precision") << name_of(c.training.precision);
        if (full_) key("cuda_graphs") << c.training.cuda_graphs;
        if (full_) key("fused_kernels") << c.training.fused_kernels;
        if (full_) key("cast_gemm_inputs") << c.training.cast_gemm_inputs;
        if (full_) key("gemm_epilogues") << c.training.gemm_epilogues;
        if (full_) key("deterministic") << c.training.deterministic;
        // Only when set: the digests of existing runs stay as they were.
        if (c.training.steps_per_epoch > 0) key("steps_per_epoch") << c.training.steps_per_epoch;
        if (c.training.clip_norm > 0) number("clip_norm", c.training.clip_norm);
        if (c.training.accumulate_steps > 1) key("accumulate_steps") << c.training.accumulate_steps;
        if (c.training.ema.enabled) {
            key("ema") << YAML::BeginMap;
            number("decay", c.training.ema.decay);
            key("start_epoch") << c.training.ema.start_epoch;
            key("evaluate") << c.training.ema.evaluate;
            out_ << YAML::EndMap;
        }
        out_ << YAML::EndMap;
        emit_strategy(c.strategy);
        key("checkpoint") << YAML::BeginMap;
        key("dir") << c.checkpoint.dir;
        key("every_epochs") << c.checkpoint.every_epochs;
        key("keep_last") << c.checkpoint.keep_last;
        key("save_best") << c.checkpoint.save_best;
        key("monitor") << name_of(c.checkpoint.monitor);
        key("mode") << name_of(c.checkpoint.mode);
        out_ << YAML::EndMap;
        // Part of the digest, as the schedule is; only when on (the digests
        // of configs without it stay as they were).
        if (c.reduce_lr_on_plateau.enabled) {
            const ReduceLrOnPlateauConfig& p = c.reduce_lr_on_plateau;
            key("reduce_lr_on_plateau") << YAML::BeginMap;
            key("monitor") << name_of(p.monitor);
            number("factor", p.factor);
            key("patience") << p.patience;
            number("min_delta", p.min_delta);
            key("cooldown") << p.cooldown;
            number("min_lr", p.min_lr);
            key("mode") << name_of(p.mode);
            out_ << YAML::EndMap;
        }
        // Like training.epochs, not in the digest: it decides how many epochs
        // run, not what one computes. Only when on (a config without the
        // section reads back the same).
        if (full_ && c.early_stopping.enabled) {
            const EarlyStoppingConfig& e = c.early_stopping;
            key("early_stopping") << YAML::BeginMap;
            key("monitor") << name_of(e.monitor);
            key("patience") << e.patience;
            number("min_delta", e.min_delta);
            key("mode") << name_of(e.mode);
            key("start_from_epoch") << e.start_from_epoch;
            out_ << YAML::EndMap;
        }
        key("logging") << YAML::BeginMap;
        key("level") << name_of(c.logging.level);
        key("progress") << name_of(c.logging.progress);
        key("metrics_file") << c.logging.metrics_file;
        key("tensorboard") << c.logging.tensorboard;
        key("every_steps") << c.logging.every_steps;
        out_ << YAML::EndMap;
        out_ << YAML::EndMap;
        return std::string(out_.c_str()) + "\n";
    }

private:
    YAML::Emitter& key(const char* name) { return out_ << YAML::Key << name << YAML::Value; }
    void number(const char* name, double value) { key(name) << format_number(value); }

    // "3,3" (a list the file gave) goes back out as [3, 3]; anything else as text.
    void param(const std::string& text) {
        std::vector<std::string> items;
        size_t start = 0;
        for (size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1)
            items.push_back(text.substr(start, comma - start));
        items.push_back(text.substr(start));
        bool as_list = items.size() > 1;
        for (const auto& item : items)
            as_list = as_list && !item.empty() && item.front() != ' ' && item.back() != ' ';
        if (as_list)
            out_ << YAML::Flow << items;
        else
            out_ << text;
    }

    void emit_model(const ModelConfig& m) {
        key("model") << YAML::BeginMap;
        key("input_shape") << YAML::Flow << m.input_shape;
        key("layers") << YAML::BeginSeq;
        for (const auto& layer : m.layers) {
            out_ << YAML::Flow << YAML::BeginMap;
            key("type") << layer.type;
            const std::string& name = layer.resolved_name.empty() ? layer.name : layer.resolved_name;
            if (!name.empty()) key("name") << name;
            // inputs: only where they are not the layer before (so a chain reads as it always did).
            std::vector<std::string> inputs = layer.resolved_inputs;
            if (layer.resolved_name.empty())
                for (const auto& in : layer.inputs)
                    inputs.push_back(in.layer == LayerInput::kByName ? in.name : std::string("#").append(std::to_string(in.layer)));
            if (inputs.size() == 1) key("inputs") << inputs[0];
            else if (!inputs.empty()) key("inputs") << YAML::Flow << inputs;
            const auto emit = [&](const auto& params) {
                for (const auto& [k, v] : params) {
                    out_ << YAML::Key << k << YAML::Value;
                    param(v);
                }
            };
            if (layer.resolved_name.empty()) emit(layer.params);
            else emit(layer.resolved_params);
            out_ << YAML::EndMap;
        }
        out_ << YAML::EndSeq;
        if (!m.init_from.empty()) key("init_from") << m.init_from;
        if (!m.init_map.empty()) {
            key("init_map") << YAML::Flow << YAML::BeginMap;
            for (const auto& [from, to] : m.init_map) out_ << YAML::Key << from << YAML::Value << to;
            out_ << YAML::EndMap;
        }
        if (!m.init_skip.empty()) key("init_skip") << YAML::Flow << m.init_skip;
        out_ << YAML::EndMap;
    }

    void emit_optimizer(const OptimizerConfig& o) {
        key("optimizer") << YAML::BeginMap;
        key("type") << name_of(o.type);
        number("learning_rate", o.learning_rate);
        number("momentum", o.momentum);
        key("nesterov") << o.nesterov;
        number("beta1", o.beta1);
        number("beta2", o.beta2);
        number("epsilon", o.epsilon);
        // RMSprop's own keys only for it: other configs keep their digests.
        if (o.type == OptimizerType::rmsprop) {
            number("rho", o.rho);
            key("centered") << o.centered;
        }
        number("weight_decay", o.weight_decay);
        if (!o.no_decay.empty()) key("no_decay") << YAML::Flow << o.no_decay;
        const ScheduleConfig& s = o.schedule;
        key("schedule") << YAML::BeginMap;
        key("type") << name_of(s.type);
        number("decay_rate", s.decay_rate);
        key("decay_epochs") << s.decay_epochs;
        key("decay_steps") << s.decay_steps;
        key("staircase") << s.staircase;
        number("min_lr", s.min_lr);
        key("warmup_epochs") << s.warmup_epochs;
        if (s.warmup_steps > 0) key("warmup_steps") << s.warmup_steps;  // only when set: digests stay
        if (s.type == ScheduleType::one_cycle) {
            if (s.max_lr > 0) number("max_lr", s.max_lr);
            number("pct_start", s.pct_start);
            number("div_factor", s.div_factor);
            number("final_div_factor", s.final_div_factor);
            if (s.cycle_momentum) {  // only when on: digests stay
                key("cycle_momentum") << true;
                number("base_momentum", s.base_momentum);
                number("max_momentum", s.max_momentum);
            }
        }
        out_ << YAML::EndMap << YAML::EndMap;
    }

    void emit_data(const DataConfig& d) {
        key("data") << YAML::BeginMap;
        key("dataset") << d.dataset;
        key("path") << d.path;
        key("format") << name_of(d.format);
        if (d.scale_auto)
            key("scale") << "auto";
        else
            number("scale", d.scale);
        // Only when set, as shard_files below.
        if (!d.normalize_mean.empty()) {
            key("normalize") << YAML::BeginMap;
            numbers("mean", d.normalize_mean);
            numbers("std", d.normalize_std);
            out_ << YAML::EndMap;
        }
        if (!d.target_columns.empty()) key("target_columns") << YAML::Flow << d.target_columns;
        if (d.format == DataFormat::text) key("tokenizer") << name_of(d.tokenizer);
        if (!d.tokenizer_model.empty()) key("tokenizer_model") << d.tokenizer_model;
        if (d.vocab_size > 0) key("vocab_size") << d.vocab_size;
        if (d.sequence_stride > 0) key("sequence_stride") << d.sequence_stride;  // only when set: digests stay
        if (!d.augment.empty()) emit_augment(d.augment);
        number("validation_split", d.validation_split);
        key("limit") << d.limit;
        key("test_limit") << d.test_limit;
        // Only when set: the default leaves the digests of existing runs as they were.
        if (d.shard_files) key("shard_files") << true;
        if (d.stream) key("stream") << true;
        // auto streams or not by the machine's memory, with the same results: outside the digest.
        if (full_ && d.stream_auto) {
            key("stream") << "auto";
            number("stream_memory_fraction", d.stream_memory_fraction);
        }
        if (d.format == DataFormat::image_folder) {
            key("crop_to_aspect_ratio") << d.crop_to_aspect_ratio;
            key("skip_bad_files") << d.skip_bad_files;
            if (full_ || !d.cache_dir.empty()) key("cache_dir") << d.cache_dir;
        }
        if (full_) key("resident") << name_of(d.resident);
        if (full_) key("workers") << d.workers;
        key("synthetic") << YAML::BeginMap;
        key("samples") << d.synthetic_samples;
        key("classes") << d.synthetic_classes;
        key("seed") << d.synthetic_seed;
        out_ << YAML::EndMap << YAML::EndMap;
    }

    void numbers(const char* name, const std::vector<double>& values) {
        key(name) << YAML::Flow << YAML::BeginSeq;
        for (double v : values) out_ << format_number(v);
        out_ << YAML::EndSeq;
    }

    // Every step with all its settings, defaults included.
    void emit_augment(const std::vector<AugmentConfig>& steps) {
        key("augment") << YAML::BeginSeq;
        for (const AugmentConfig& a : steps) {
            out_ << YAML::BeginMap << YAML::Key << name_of(a.type) << YAML::Value << YAML::Flow << YAML::BeginMap;
            switch (a.type) {
                case AugmentType::random_crop:
                    key("padding") << a.padding;
                    key("mode") << name_of(a.mode);
                    break;
                case AugmentType::random_flip: key("mode") << name_of(a.flip); break;
                case AugmentType::random_translate:
                    number("height_factor", a.height_factor);
                    number("width_factor", a.width_factor);
                    key("mode") << name_of(a.mode);
                    break;
                case AugmentType::cutout:
                    key("size") << a.size;
                    key("count") << a.count;
                    break;
                case AugmentType::random_rotation: number("degrees", a.degrees); break;
            }
            out_ << YAML::EndMap << YAML::EndMap;
        }
        out_ << YAML::EndSeq;
    }

    void emit_strategy(const StrategyConfig& s) {
        key("strategy") << YAML::BeginMap;
        key("type") << name_of(s.type);
        key("devices");
        if (s.devices == "all" || s.devices == "cpu")
            out_ << s.devices;
        else
            param(s.devices);
        key("replicas") << s.replicas;
        key("communicator") << name_of(s.communicator);
        key("replicas_per_gpu") << s.replicas_per_gpu;
        key("timeout_seconds") << s.timeout_seconds;
        if (full_) number("stall_warning_seconds", s.stall_warning_seconds);
        if (full_) number("bucket_mb", s.bucket_mb);
        out_ << YAML::EndMap;
    }

    YAML::Emitter out_;
    bool full_ = true;
};

}  // namespace

std::string resolved_yaml(const RunConfig& config) { return ConfigEmitter().emit(config, true); }

std::string config_digest(const RunConfig& config) {
    return fnv1a64_hex(ConfigEmitter().emit(config, false));
}

std::string fnv1a64_hex(const std::string& text) {
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (unsigned char c : text) {
        hash ^= c;
        hash *= 0x100000001b3ULL;
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
    return hex;
}

}  // namespace gputrain::config
