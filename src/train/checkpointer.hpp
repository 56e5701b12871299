// Checkpointer: the training state of replica 0 (weights, non-trainable state
// such as batch norm's moving statistics, optimizer slots, epoch, step, seed,
// config digest, metrics) in safetensors files in the run dir:
// epoch-NNN.safetensors every `every_epochs`, last.safetensors always,
// best.safetensors when the monitored metric improves. Tensors are named
// "<layer>/<param>" (state too: "batch_norm/moving_mean") and
// "optimizer/<slot>/<layer>/<param>".
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "optim/schedule.hpp"
#include "train/checkpoint_metadata.hpp"
#include "train/metrics_file.hpp"
#include "train/monitored_metric.hpp"
#include "train/replica.hpp"

namespace gputrain::train {

struct TrainingState {
    int64_t epochs_done = 0;
    int64_t global_step = 0;
    bool has_best = false;
    double best_value = 0;  // of checkpoint.monitor
    // What best_value measures, as Checkpointer::best_of gives it ("val_loss
    // min"); "" in checkpoints written before it was stored.
    std::string best_of;
    // Whether the checkpoint's own epoch is that best (its value of the
    // monitor is best_value): it can stand in for a lost best.safetensors.
    bool holds_best = false;
    // An interrupted epoch: steps of epoch `epochs_done` already done, and the
    // loss/correct/sample sums over them (so the resumed epoch reports the same
    // averages as an uninterrupted one). All 0 at an epoch boundary.
    int64_t step_in_epoch = 0;
    double partial_loss_sum = 0, partial_correct = 0, partial_samples = 0;
    // Steps per epoch of every epoch so far ("0:1875,3:938": metadata
    // "steps_per_epoch"); empty in checkpoints written before it was stored.
    optim::EpochStepsHistory epoch_steps;
    // training.precision: fp16's dynamic loss scale (0 = not scaling).
    double loss_scale = 0;
    int64_t loss_scale_good_steps = 0;
    // The checkpoint's whole metadata, as restore() read it: the callbacks
    // (train/callback.hpp) restore their own state from it.
    Metadata metadata;
    // The resolved config the checkpoint was trained with (metadata "config");
    // "" for checkpoints written before it was stored.
    std::string config_yaml;
    // format: text: the tokenizer's name and, for chars, its characters in id
    // order (UTF-8): metadata "tokenizer" and "vocabulary", which `generate`
    // decodes with. Empty for other data.
    std::string tokenizer, vocabulary;
    // Inference under training.ema with evaluate: the weights loaded were the
    // checkpoint's moving average ("ema/..."), not its last weights.
    bool ema_weights = false;
};

class Checkpointer {
public:
    Checkpointer(const config::RunConfig& cfg, const std::string& dir);

    const std::string& dir() const { return dir_; }
    // The metric that decides "best" (checkpoint.monitor and mode), resolved
    // against whether validation exists.
    MonitoredMetric best_metric(bool has_validation) const;

    // Writes the files due after an epoch; returns the paths written.
    // `callbacks`: the callbacks' metadata, stored beside the trainer's.
    // `final_epoch`: training ends after it (early stopping), so epoch-NNN is
    // written as after training.epochs' last.
    std::vector<std::string> save_epoch(Replica& replica0, const TrainingState& state, const EpochRecord& record,
                                        const Metadata& callbacks, bool is_best, bool final_epoch = false);

    // last.safetensors in the middle of an epoch (state.step_in_epoch > 0); `signal` names why.
    std::string save_interrupted(Replica& replica0, const TrainingState& state, const EpochRecord& partial,
                                 const Metadata& callbacks, const std::string& signal);

    std::string path_for_epoch(int64_t epoch) const;  // epoch is 1-based

    // After a resume from epoch `epoch`: the file names in the folder written
    // later by a run that went past it (epoch-NNN above it; best.safetensors
    // when its epoch is), oldest first.
    std::vector<std::string> files_past(int64_t epoch) const;
    std::string last_path() const;
    // The epoch best.safetensors in the folder holds; 0 when there is none
    // (or it cannot be read).
    int64_t best_file_epoch() const;

    // Before training: the folder exists and takes a file, leftovers of a
    // killed write (*.tmp-PID) are removed, and there is room for a checkpoint
    // of `checkpoint_bytes` while the previous one still exists.
    void prepare(size_t checkpoint_bytes) const;

private:
    void write(const std::string& path, Replica& replica0, const TrainingState& state, const EpochRecord& record,
               const Metadata& callbacks, const std::string& interrupted = "");
    // Keeps the newest keep_last epoch-NNN files up to `epoch` (by number:
    // epoch-1000 is newer than epoch-999). Files past it are another run's
    // (a resume from an older epoch): left alone, not counted.
    void prune_old_epochs(int64_t epoch) const;

    const config::RunConfig& cfg_;
    std::string dir_;
};

// Bytes of a checkpoint of this replica (weights and optimizer slots, plus header room).
size_t checkpoint_bytes(Replica& replica0);

// Loads the weights and state (and, when `with_optimizer`, the optimizer state) of the
// file into every replica, checking each tensor's name, dtype and shape; returns
// the training state from its metadata (the callbacks' keys are theirs to
// check, on --resume). DataError names the file and tensor.
TrainingState restore(const std::string& path, std::vector<std::unique_ptr<Replica>>& replicas,
                      const config::RunConfig& cfg, bool with_optimizer, std::string* warning = nullptr);

// The resolved config `path` was trained with (its metadata), "" when it
// stores none (an earlier gputrain); DataError when the file cannot be read.
std::string checkpoint_config(const std::string& path);

// The epochs `path` was written after (its metadata); -1 when it cannot be
// read (restore() then says why).
int64_t checkpoint_epochs_done(const std::string& path);

// The newest checkpoint in `dir` for --resume: last.safetensors, else the
// highest epoch-NNN. Empty when there is none.
std::string latest_checkpoint(const std::string& dir);
// The checkpoints a run writes that are in `dir` (last, best, epoch-NNN
// .safetensors), as paths in name order; none when dir does not exist.
std::vector<std::string> run_checkpoints(const std::string& dir);

}  // namespace gputrain::train
