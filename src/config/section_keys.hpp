// The keys each config section accepts, in one place: the readers take their
// section's list from here, and an unknown key is looked up in the others so
// that a key put in the wrong section is answered with where it belongs
// (training.learning_rate -> optimizer.learning_rate).
#pragma once

#include <string>
#include <vector>

namespace gputrain::config {

struct SectionKeys {
    std::string path;  // "" for the top level, "optimizer.schedule" for a nested one
    std::vector<std::string> keys;
};

inline const std::vector<SectionKeys>& section_keys() {
    static const std::vector<SectionKeys> sections{
        {"", {"run_dir", "blocks", "model", "loss", "metrics", "optimizer", "data", "training", "strategy", "checkpoint",
              "early_stopping", "reduce_lr_on_plateau", "logging"}},
        {"model", {"input_shape", "layers", "init_from", "init_map", "init_skip"}},
        {"loss", {"name", "from_logits", "delta", "label_smoothing"}},
        {"optimizer",
         {"type", "learning_rate", "momentum", "nesterov", "beta1", "beta2", "epsilon", "rho", "centered", "weight_decay",
          "no_decay", "schedule"}},
        {"optimizer.schedule",
         {"type", "decay_rate", "decay_epochs", "decay_steps", "staircase", "min_lr", "warmup_epochs", "warmup_steps", "max_lr", "pct_start",
          "div_factor", "final_div_factor", "cycle_momentum", "base_momentum", "max_momentum"}},
        {"data",
         {"dataset", "path", "format", "scale", "normalize", "augment", "validation_split", "limit", "test_limit",
          "shard_files", "synthetic", "resident", "crop_to_aspect_ratio", "skip_bad_files", "cache_dir", "stream", "stream_memory_fraction", "workers", "target_columns", "tokenizer", "tokenizer_model", "vocab_size", "sequence_stride"}},
        {"data.normalize", {"mean", "std"}},
        {"data.synthetic", {"samples", "classes", "seed"}},
        {"training",
         {"epochs", "batch_size", "shuffle", "seed", "on_nan", "precision", "cuda_graphs", "fused_kernels",
          "cast_gemm_inputs", "gemm_epilogues", "deterministic", "steps_per_epoch", "clip_norm", "accumulate_steps", "ema"}},
        {"training.ema", {"decay", "start_epoch", "evaluate"}},
        {"strategy", {"type", "devices", "replicas", "communicator", "replicas_per_gpu", "timeout_seconds", "stall_warning_seconds", "bucket_mb"}},
        {"checkpoint", {"dir", "every_epochs", "keep_last", "save_best", "monitor", "mode"}},
        {"early_stopping", {"monitor", "patience", "min_delta", "mode", "start_from_epoch"}},
        {"reduce_lr_on_plateau", {"monitor", "factor", "patience", "min_delta", "cooldown", "min_lr", "mode"}},
        {"logging", {"level", "progress", "metrics_file", "tensorboard", "every_steps"}},
    };
    return sections;
}

// The keys of the section at `path`; throws std::out_of_range for a path not above.
const std::vector<std::string>& keys_of(const std::string& path);

// Where an unknown `key` under `path` belongs: "optimizer.learning_rate" when
// another section (not a parent or child's own list entry of the same name)
// has it, or the key that a common other name stands for in this section
// ("lr" -> "learning_rate"); empty when neither.
std::string home_of_key(const std::string& path, const std::string& key);

}  // namespace gputrain::config
