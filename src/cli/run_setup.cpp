#include "cli/run_setup.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "backend/cpu/sizing_backend.hpp"
#include "config/gemm_epilogues_use.hpp"
#include "config/config_diff.hpp"
#include "config/load.hpp"
#include "nn/model.hpp"
#include "nn/resolve_layers.hpp"
#include "config/resolved_yaml.hpp"
#include "core/error.hpp"
#include "train/checkpointer.hpp"

namespace gputrain::cli {

namespace {

config::RunConfig read_config(const CommonOptions& options, const std::string& checkpoint) {
    if (!options.config_path.empty()) return config::load(options.config_path, options.overrides);
    if (!options.run_dir.empty()) {
        const std::string path = (std::filesystem::path(options.run_dir) / "config.yaml").string();
        std::error_code ec;
        if (!std::filesystem::is_regular_file(path, ec))
            throw ConfigError("no CONFIG given, and " + path +
                              " does not exist (fit writes it into the run dir); give the config file the run was "
                              "trained with");
        return config::load(path, options.overrides);
    }
    if (!checkpoint.empty()) {
        require_checkpoint_file("--checkpoint", checkpoint);
        const std::string stored = train::checkpoint_config(checkpoint);
        if (stored.empty())
            throw ConfigError("no CONFIG given, and " + checkpoint +
                              " stores no config (an earlier gputrain wrote it); give the config file it was "
                              "trained with");
        return config::load_from_string(stored, checkpoint + " (its config)", options.overrides);
    }
    throw ConfigError("give the config file (CONFIG), or --run-dir RUN_DIR to use the config.yaml that fit wrote "
                      "there (or --checkpoint FILE, whose config is stored in it)");
}

}  // namespace

config::RunConfig load_config(const CommonOptions& options, const std::string& checkpoint) {
    config::RunConfig cfg = read_config(options, checkpoint);
    if (options.replicas > cfg.training.batch_size)
        throw ConfigError("--replicas: " + std::to_string(options.replicas) + " replicas for a global batch of " +
                          std::to_string(cfg.training.batch_size) +
                          " leave some without samples; use at most training.batch_size replicas");
    // Layer and loss errors are config errors too: report them before any data is read.
    SizingBackend sizing;  // sizes only: a model too large for this machine is reported later, by the memory check
    nn::Model check(cfg.model, cfg.loss, sizing, 1, cfg.training.seed);
    // Layer defaults into the resolved config and its digest, which leaves --run-dir out.
    nn::resolve_layers(cfg);
    if (!options.run_dir.empty()) {
        cfg.run_dir = options.run_dir;
        cfg.resolved_yaml = config::resolved_yaml(cfg);  // the copy in the run dir names the run dir used
    }
    if (cfg.checkpoint.dir.empty()) cfg.checkpoint.dir = cfg.run_dir;
    return cfg;
}

namespace {

spdlog::level::level_enum spdlog_level(config::LogLevel level) {
    switch (level) {
        case config::LogLevel::trace: return spdlog::level::trace;
        case config::LogLevel::debug: return spdlog::level::debug;
        case config::LogLevel::info: return spdlog::level::info;
        case config::LogLevel::warn: return spdlog::level::warn;
        case config::LogLevel::error: return spdlog::level::err;
    }
    return spdlog::level::info;
}

}  // namespace

void apply_log_level(const config::RunConfig& cfg, bool quiet) {
    // --quiet (and the commands whose stdout is data) drop info lines; a stricter logging.level still holds.
    const auto configured = spdlog_level(cfg.logging.level);
    spdlog::set_level(quiet ? std::max(configured, spdlog::level::warn) : configured);
}

void warn_if_trained_differently(const std::string& checkpoint, const std::string& trained_yaml,
                                 const config::RunConfig& cfg, bool inputs_scaled_by_user) {
    if (trained_yaml.empty()) return;  // written before checkpoints kept their config
    config::ConfigChanges diff = config::changed_model_keys(trained_yaml, cfg.resolved_yaml, nn::resolved_again);
    if (inputs_scaled_by_user)
        std::erase_if(diff.changes, [](const std::string& c) { return c.rfind("data.scale:", 0) == 0; });
    if (!diff.readable) {
        spdlog::warn("warning: {}: the config stored in it is not a readable gputrain config, so it is not checked "
                     "against {}'s model",
                     checkpoint, cfg.source_file);
        return;
    }
    const std::string list = diff.text();
    if (list.empty()) return;
    spdlog::warn("warning: {} was trained with another model, loss or input scaling than {} gives ({}); using {}'s",
                 checkpoint, cfg.source_file, list, cfg.source_file);
}

std::string gpu_only_keys_set(const config::RunConfig& cfg) {
    const config::TrainingConfig defaults;
    std::string keys;
    const auto add = [&](bool set, const char* name) {
        if (set) keys += (keys.empty() ? "training." : ", training.") + std::string(name);
    };
    add(cfg.training.cast_gemm_inputs != defaults.cast_gemm_inputs, "cast_gemm_inputs");
    add(cfg.training.gemm_epilogues != defaults.gemm_epilogues, "gemm_epilogues");
    add(cfg.training.deterministic != defaults.deterministic, "deterministic");
    return keys;
}

void log_cpu_notes(const config::RunConfig& cfg, bool on_gpu, spdlog::level::level_enum level) {
    if (on_gpu) return;
    // As a warning (bench): with the prefix every warning has.
    const char* prefix = level >= spdlog::level::warn ? "warning: " : "";
    if (cfg.training.precision != config::Precision::fp32)
        spdlog::log(level, "{}training.precision: {} changes GPU matrix products only; the CPU computes in fp32{}",
                     prefix, config::name_of(cfg.training.precision),
                     cfg.training.precision == config::Precision::fp16
                         ? " (with the fp16 loss scaling, which changes no result here)"
                         : "");
    if (const std::string keys = gpu_only_keys_set(cfg); !keys.empty())
        spdlog::log(level, "{}{}: only a GPU acts on this; no effect on the CPU", prefix, keys);
}

void log_gemm_epilogues(const config::RunConfig& cfg, const Backend& backend) {
    if (!cfg.training.gemm_epilogues || !backend.has_device_memory()) return;
    if (const std::string reason = config::gemm_epilogues_unused_reason(cfg); !reason.empty()) {
        spdlog::info("{}", reason);
        return;
    }
    const Backend::EpiloguePlans plans = backend.gemm_epilogue_plans();
    spdlog::info("GEMM epilogues: {} of {} GEMM shapes asked for ran with their bias and activation (or bias "
                 "gradient) inside cuBLASLt's GEMM; the rest took the plain path",
                 plans.taken, plans.asked);
}

namespace {

// Layer i of the expanded list as --set reaches it: model.layers[N] as written, or a block's layer by name.
std::string written_as(const config::RunConfig& cfg, size_t i) {
    const config::LayerSpec& spec = cfg.model.layers[i];
    if (spec.path.empty()) return "model.layers[" + std::to_string(i) + "]";
    return spec.scoped ? "layer '" + spec.name + "' (" + spec.path + ")" : spec.path;
}

}  // namespace

void check_classes(const data::Dataset& data, int64_t model_classes, const config::RunConfig& cfg,
                   int64_t model_positions) {
    // Where the last layer is in the config; the labels are counted over every split read.
    const size_t last = cfg.model.layers.size() - 1;
    const auto& where = cfg.model.layers[last].where;
    const auto place = where.count("units") ? where.at("units") : where.count("") ? where.at("") : cfg.source_file;
    const std::string loss = config::name_of(cfg.loss.name);
    const std::string metric = cfg.metric();
    if (!data.text && model_positions != 1)
        throw ConfigError(place + ": " + written_as(cfg, last) + ": the model's output has " +
                          std::to_string(model_positions) + " positions of " + std::to_string(model_classes) +
                          " scores, and " + data.description +
                          " has one label per sample; add a flatten layer before the last dense layer (one output "
                          "per position is for format: text)");
    if (data.text) {
        // Every embedding must take every token id of the vocabulary.
        for (size_t i = 0; i < cfg.model.layers.size(); ++i) {
            const config::LayerSpec& layer = cfg.model.layers[i];
            const auto dim = layer.params.find("input_dim");
            if (layer.type != "embedding" || dim == layer.params.end()) continue;
            if (std::stoll(dim->second) < data.num_classes) {
                const auto at = layer.where.count("input_dim") ? layer.where.at("input_dim") : cfg.source_file;
                // A dense layer tied to this embedding (tie_weights) must follow: say so at once.
                const auto name_of = [](const config::LayerSpec& l) {
                    return l.resolved_name.empty() ? l.name : l.resolved_name;
                };
                std::string tied;
                for (const config::LayerSpec& other : cfg.model.layers) {
                    const auto tie = other.params.find("tie_weights");
                    if (other.type == "dense" && tie != other.params.end() && !name_of(layer).empty() &&
                        tie->second == name_of(layer))
                        tied = ", and units: " + std::to_string(data.num_classes) + " on '" + name_of(other) +
                               "', whose kernel is its table (tie_weights)";
                }
                throw ConfigError(at + ": " + written_as(cfg, i) + " (embedding): input_dim " +
                                  dim->second + " is smaller than the vocabulary of " + std::to_string(data.num_classes) +
                                  " tokens (" + data.description + "); set input_dim: " +
                                  std::to_string(data.num_classes) + tied);
            }
        }
        if (model_positions != data.label_width)
            throw ConfigError(place + ": " + written_as(cfg, last) + ": format text labels each of the " +
                              std::to_string(data.label_width) + " positions of a sample, so the model's output must be " +
                              "(None, " + std::to_string(data.label_width) + ", " + std::to_string(data.num_classes) +
                              "): a dense layer on the last axis, without flatten");
    }
    if (data.real_targets) {
        if (config::is_cross_entropy(cfg.loss.name))
            throw ConfigError(cfg.source_file + ": loss: " + loss + " trains class labels, and the targets of " +
                              data.description +
                              " are real values; use mean_squared_error, mean_absolute_error or huber");
        if (metric == "accuracy")
            throw ConfigError(cfg.source_file + ": metrics: " +
                              (cfg.metrics_given ? "accuracy" : "the default, [accuracy],") +
                              " counts class labels, and the targets of " + data.description +
                              " are real values; " + (cfg.metrics_given ? "use" : "set") + " metrics: [mae] or [mse]");
        if (data.label_width != model_classes)
            throw ConfigError(place + ": " + written_as(cfg, last) + ": the model has " +
                              std::to_string(model_classes) + " output" + (model_classes == 1 ? "" : "s") + ", and " +
                              data.description + " has " + std::to_string(data.label_width) + " target" +
                              (data.label_width == 1 ? "" : "s") + " per sample; set the last layer's units to " +
                              std::to_string(data.label_width));
        return;
    }
    if (config::needs_real_targets(cfg.loss.name) || metric != "accuracy")
        throw ConfigError(cfg.source_file + ": " +
                          (config::needs_real_targets(cfg.loss.name) ? "loss: " + loss : "metrics: " + metric) +
                          " needs real-valued targets, and " + data.description +
                          " has class labels; name the target columns in data.target_columns (CSV) or give a "
                          "float y array (NPY)");
    if (data.num_classes <= model_classes) return;
    throw ConfigError(place + ": " + written_as(cfg, last) + ": the model has " +
                      std::to_string(model_classes) + " outputs, but the data's labels go up to " +
                      std::to_string(data.num_classes - 1) + " (" + data.description +
                      "); set the last layer's units to at least " + std::to_string(data.num_classes));
}

void require_checkpoint_file(const std::string& flag, const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw ConfigError(flag + ": '" + path + "' does not exist");
    if (std::filesystem::is_directory(path, ec))
        throw ConfigError(flag + ": '" + path + "' is a folder; give a checkpoint file in it, e.g. " +
                          (std::filesystem::path(path) / "last.safetensors").string());
}

void require_output_apart(const std::string& flag, const std::string& output,
                          std::initializer_list<std::pair<const char*, const std::string*>> reads,
                          const std::string& content, const std::string& advice, const std::string& example) {
    namespace fs = std::filesystem;
    for (const auto& [what, path] : reads) {
        std::error_code ec;
        if (!path->empty() && fs::equivalent(output, *path, ec))
            throw ConfigError(flag + " '" + output + "' is " + what + " ('" + *path + "'): writing " + content +
                              " would replace it; " + advice);
    }
    const fs::path folder = fs::path(output).parent_path();
    std::error_code ec;
    if (!folder.empty() && !fs::is_directory(folder, ec))
        throw ConfigError(flag + " '" + output + "': the folder '" + folder.string() +
                          (fs::exists(folder, ec) ? "' is not a folder" : "' does not exist") +
                          "; create it or give another path");
    if (fs::is_directory(output, ec))
        throw ConfigError(flag + " '" + output + "' is a folder; give a file name, e.g. " +
                          (fs::path(output) / example).string());
}

}  // namespace gputrain::cli
