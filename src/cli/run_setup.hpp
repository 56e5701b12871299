// What fit and evaluate share: reading the config with overrides, choosing the
// strategy from the devices found, building the replicas.
#pragma once

#include <spdlog/spdlog.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "data/dataset.hpp"
#include "device/devices.hpp"
#include "train/replica.hpp"
#include "train/strategy.hpp"

namespace gputrain::cli {

struct CommonOptions {
    std::string config_path;
    std::vector<std::string> overrides;  // --set KEY=VALUE
    std::string run_dir;                 // --run-dir
    std::string device = "auto";         // --device
    int64_t replicas = 0;                // --replicas
};

// The config of the command: CONFIG with --set, or without CONFIG (evaluate,
// predict, summary) the one a run stored: RUN_DIR/config.yaml (--run-dir),
// else `checkpoint`'s own copy. Checks the model too.
config::RunConfig load_config(const CommonOptions& options, const std::string& checkpoint = "");

// Sets spdlog's level from logging.level (and --quiet).
void apply_log_level(const config::RunConfig& cfg, bool quiet);

// The label range of the data must fit the model's outputs.
void check_classes(const data::Dataset& data, int64_t model_classes, const config::RunConfig& cfg,
                   int64_t model_positions = 1);

// The file a command writes, named by `flag` (--output, --onnx): not a file
// it reads (`reads`: what and path, e.g. {"--checkpoint", &checkpoint}), in a
// folder that exists, and not a folder (`example`: a file name to suggest in
// it). `content` is what writing would put there ("the probabilities"),
// `advice` what to do instead ("give another file"). ConfigError, before
// anything is computed.
void require_output_apart(const std::string& flag, const std::string& output,
                          std::initializer_list<std::pair<const char*, const std::string*>> reads,
                          const std::string& content, const std::string& advice, const std::string& example);

// A checkpoint named by `flag` (--checkpoint, --resume) must be a file:
// ConfigError "FLAG: 'PATH' does not exist", or, for a folder, that it is one
// and which file in it to give.
void require_checkpoint_file(const std::string& flag, const std::string& path);

// evaluate and predict: warns when the checkpoint was trained with another
// model, loss or data.scale than `cfg` has (config::changed_model_keys of the
// config stored in it), naming the keys; the results use `cfg`'s.
// `inputs_scaled_by_user`: predict, whose inputs may come normalized already
// (the data.scale warning's advice is --set data.scale=1): data.scale is not compared.
void warn_if_trained_differently(const std::string& checkpoint, const std::string& trained_yaml,
                                 const config::RunConfig& cfg, bool inputs_scaled_by_user = false);

// The training keys set away from their defaults that only a GPU acts on
// (cast_gemm_inputs, gemm_epilogues, deterministic), as "training.a, training.b";
// empty when none is.
std::string gpu_only_keys_set(const config::RunConfig& cfg);

// On the CPU: that training.precision other than fp32 and the GPU-only keys
// set (gpu_only_keys_set) change nothing there, logged at `level` (bench,
// which logs warnings only, passes warn: its figures would be taken for bf16's).
void log_cpu_notes(const config::RunConfig& cfg, bool on_gpu,
                   spdlog::level::level_enum level = spdlog::level::info);

// Under training.gemm_epilogues on a GPU: how many GEMM shapes ran with their
// bias and activation (or bias gradient) in the GEMM, or why none could, as an info line.
void log_gemm_epilogues(const config::RunConfig& cfg, const Backend& backend);

}  // namespace gputrain::cli
