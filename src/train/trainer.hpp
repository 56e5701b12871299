// Trainer: the epoch loop, written once for every backend. Per step each
// replica runs forward/backward on its shard, the gradients are summed across
// replicas (each replica's loss is a SUM over its rows scaled by 1/global
// batch, so the sum is the global-batch mean whatever the split), and every
// replica applies the identical optimizer step. Between epochs, on the calling
// thread: validation, the log line, metrics.csv and checkpoints from replica 0.
// In a multi-worker run every worker runs this loop on its replicas; only the
// worker holding global rank 0 prints, writes metrics.csv and checkpoints.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "data/dataset.hpp"
#include "data/loader.hpp"
#include "optim/schedule.hpp"
#include "train/callback.hpp"
#include "train/checkpointer.hpp"
#include "train/early_stopping.hpp"
#include "train/loss_scaler.hpp"
#include "train/metrics_file.hpp"
#include "train/progress.hpp"
#include "train/reduce_lr_on_plateau.hpp"
#include "train/replica.hpp"
#include "train/tensorboard_writer.hpp"

namespace gputrain::train {

struct FitOptions {
    std::string run_dir;
    std::string resume_from;      // a checkpoint path; "" = fresh start
    ProgressMode progress = ProgressMode::lines;
    std::FILE* out = stdout;
    // Warnings ("warning: ..." lines), apart from `out` as Keras keeps them; out is flushed first.
    std::FILE* warnings = stderr;
    // The command that continues this run, for messages ("gputrain fit CFG --run-dir D --resume").
    std::string resume_command;
    // Called by the writing worker once the checkpoint to resume from (if any)
    // has loaded, before training writes anything: a resume that fails leaves
    // the run dir as it was. It gets restore()'s warning that the checkpoint
    // was written with another config ("" when not) to report, as it sees fit
    // beside what it knows of the run dir; without on_start the trainer prints it.
    std::function<void(const std::string& resume_warning)> on_start;
    // The info lines ("Resuming from ...", "Continuing epoch ...", fp16's
    // overflow count); fit --quiet turns them off. Warnings follow spdlog's level.
    bool info = true;
};

struct FitResult {
    int64_t epochs_done = 0;
    std::vector<EpochRecord> history;   // the epochs this call ran
    std::vector<std::string> checkpoints;
    // Why early stopping ended training (this run, or the run resumed); "" when it did not.
    std::string stopped_early;
};

class Trainer {
public:
    Trainer(const config::RunConfig& cfg, std::vector<std::unique_ptr<Replica>>& replicas,
            const data::DataSplits& data, FitOptions options);
    FitResult fit();

private:
    // What replica 0 reports from an epoch (written by rank 0 only).
    struct EpochTotals {
        double loss_sum = 0, correct = 0, samples = 0;  // including a resumed epoch's earlier part
        int64_t steps_done = 0;        // within the epoch, when it stops
        bool interrupted = false;      // stopped early by a signal
        bool stop_after_epoch = false; // a signal seen at the epoch's last step
        int64_t skipped_steps = 0;     // non-finite gradients under on_nan: skip_step
        int64_t overflow_steps = 0;    // fp16 steps skipped by the loss scaler
    };

    // fit()'s parts, in the order they run.
    // --resume: the state of the checkpoint (callbacks' included), what it
    // means for the run dir and best.safetensors, reported; ConfigError when
    // this config cannot continue it.
    void resume(Checkpointer& checkpointer, const MonitoredMetric& best_metric, std::string& resume_warning,
                bool& stale_best_file);
    // The steps per epoch so far, this run's from its first epoch on.
    void continue_epoch_steps();
    // Resident data, and whether each replica's steps can be CUDA graphs.
    void prepare_replicas(data::Loader& loader);
    // Epoch `epoch`'s steps on every replica; throws Error when training
    // diverged and stop_interrupted's Interrupted when a signal stopped it.
    EpochTotals train_epoch(int64_t epoch, double learning_rate, data::Loader& loader,
                            const optim::Schedule& schedule, Checkpointer& checkpointer, TensorBoardWriter& tensorboard);
    void run_epoch(Replica& r, int64_t epoch, int64_t start_step, data::Loader& loader,
                   const optim::Schedule& schedule, EpochTotals& totals, TensorBoardWriter& tensorboard);
    // The state after a whole epoch, and what it is worth reporting (warnings).
    void count_epoch(int64_t epoch, int64_t start_step, const EpochTotals& totals);
    // The epoch's record: its training averages, then validation.
    EpochRecord record_epoch(int64_t epoch, int64_t start_step, double samples_before, double learning_rate,
                             const EpochTotals& totals, std::chrono::steady_clock::time_point start);
    // best.safetensors' metric, then every callback, after one epoch; the
    // workers agree on a stop. Returns whether the epoch is the best so far.
    bool after_epoch(const EpochRecord& record, const MonitoredMetric& best_metric, EpochDecision& decision);
    // Why early stopping ended training, and where the best weights are.
    void report_early_stop(int64_t epoch, const MonitoredMetric& best_metric, const Checkpointer& checkpointer,
                           FitResult& result);
    Metadata callbacks_metadata() const;

    std::string resume_command() const;
    // Whether every worker stops after this epoch, given this one's verdict:
    // any that does stops all (one host all-reduce, in a multi-worker run only).
    bool stop_agreed(bool mine);
    // Sums `values` over the workers (each worker's replica 0 gives them):
    // one host all-reduce on every local replica.
    std::vector<double> sum_over_workers(std::vector<double> values);
    // A multi-worker run: every worker must go on from the same training
    // state (a worker resumed from another checkpoint, or not at all, would
    // train apart and leave the others waiting): WorkersDisagree on every worker.
    void require_same_state_on_workers();
    LossScaler& scaler_of(const Replica& r);
    // Copies replica 0's loss scale into state_ (for checkpoints).
    void record_loss_scale();
    void warn(const std::string& text);
    // A language model's bits-per-token column and epoch-line name (bpc, bpb, bpt); "" for other data.
    std::string bits_name() const;
    void info(const std::string& line);  // on the writing worker, unless --quiet
    // After a resume: best.safetensors made this training's best again (the
    // resumed checkpoint, when it is that best), or best started over.
    void restore_best_file(const Checkpointer& checkpointer, bool stale);
    [[noreturn]] void stop_interrupted(int64_t epoch, const EpochTotals& totals, double learning_rate,
                                       Checkpointer& checkpointer);

    const config::RunConfig& cfg_;
    std::string metric_name_ = cfg_.metric();  // accuracy, mae or mse: shown beside the loss
    std::vector<std::unique_ptr<Replica>>& replicas_;
    const data::DataSplits& data_;
    FitOptions options_;
    TrainingState state_;
    Progress progress_;
    int64_t steps_per_epoch_ = 0;
    int64_t report_every_ = 1;          // logging.every_steps, or auto (steps per epoch / 100)
    int64_t poll_every_ = 1;            // signals are agreed on at least this often (1% of an epoch)
    std::vector<std::unique_ptr<LossScaler>> scalers_;  // one per local replica (training.precision: fp16), identical
    // The callbacks, each with its state; early_ and plateau_ are two of them,
    // for what only they tell (a stop's reason, the base learning rate).
    std::vector<std::unique_ptr<Callback>> callbacks_;
    EarlyStoppingCallback* early_ = nullptr;
    ReduceLrCallback* plateau_ = nullptr;
    bool writer_ = false;               // this worker holds global rank 0: it logs and writes files
    std::string last_good_checkpoint_;  // the newest checkpoint written or resumed from
    bool graphs_warned_ = false;        // a failed CUDA graph recording was reported
};

}  // namespace gputrain::train
