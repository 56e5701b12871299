#include "train/trainer.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>

#include "config/resolved_yaml.hpp"
#include "data/text_reader.hpp"
#include "core/error.hpp"
#include "dist/process_group.hpp"
#include "dist/stall_watch.hpp"
#include "data/loader.hpp"
#include "optim/schedule.hpp"
#include "train/evaluator.hpp"
#include "train/interrupt.hpp"
#include "train/parallel.hpp"
#include "train/step.hpp"
#include "train/step_graphs.hpp"
#include "train/tensorboard_writer.hpp"

namespace gputrain::train {

Trainer::Trainer(const config::RunConfig& cfg, std::vector<std::unique_ptr<Replica>>& replicas,
                 const data::DataSplits& data, FitOptions options)
    : cfg_(cfg), replicas_(replicas), data_(data), options_(std::move(options)), progress_(options_.progress, options_.out) {
    for (auto& r : replicas_)
        scalers_.push_back(
            std::make_unique<LossScaler>(r->backend(), cfg.training.precision == config::Precision::fp16));
}

LossScaler& Trainer::scaler_of(const Replica& r) {
    for (size_t i = 0; i < replicas_.size(); ++i)
        if (replicas_[i].get() == &r) return *scalers_[i];
    throw Error("internal: a replica the trainer does not own");
}

std::string Trainer::bits_name() const {
    if (!data_.train.text) return "";
    switch (data_.train.tokenizer) {
        case config::Tokenizer::bytes: return "bpb";
        case config::Tokenizer::chars: return "bpc";
        case config::Tokenizer::sentencepiece: return "bpt";
    }
    return "bpt";
}

void Trainer::warn(const std::string& text) {
    if (!spdlog::should_log(spdlog::level::warn)) return;  // logging.level: error
    if (options_.out) std::fflush(options_.out);
    std::fprintf(options_.warnings, "warning: %s\n", text.c_str());
    std::fflush(options_.warnings);
}

void Trainer::record_loss_scale() {
    if (!scalers_[0]->enabled()) return;
    const math::LossScaleState s = scalers_[0]->read();
    state_.loss_scale = s.scale;
    state_.loss_scale_good_steps = s.good_steps;
}

namespace {

// Thrown by every replica alike (the gradients are identical after the
// all-reduce); Trainer::fit turns it into the user's message.
struct NonFiniteGradients : Error {
    NonFiniteGradients(int64_t epoch, int64_t step)
        : Error("non-finite gradients"), epoch(epoch), step(step) {}
    int64_t epoch, step;
};

}  // namespace

void Trainer::run_epoch(Replica& r, int64_t epoch, int64_t start_step, data::Loader& loader,
                        const optim::Schedule& schedule, EpochTotals& totals, TensorBoardWriter& tensorboard) {
    const int64_t epoch_first_step = state_.global_step - start_step;  // global step of this epoch's step 0
    const bool skip_nonfinite = cfg_.training.on_nan == config::OnNan::skip_step;
    const double earlier[3] = {state_.partial_loss_sum, state_.partial_correct, state_.partial_samples};
    r.reset_stats();
    // The device sums loss and correct counts in float32 from one report to
    // the next only; the host adds these up in double. Over a whole epoch
    // float32 would lose digits (and count correct answers past 2^24 wrong),
    // and an epoch resumed in the middle, whose sums restart at the
    // interruption (a report), would differ from an uninterrupted one in more
    // than the last digits.
    double folded[2] = {0, 0};
    int64_t samples = 0;
    // Throughput of the batch/* scalars: samples and time since the previous report.
    int64_t samples_reported = 0;
    auto reported_at = std::chrono::steady_clock::now();
    LossScaler& scaler = scaler_of(r);
    r.begin_epoch(data_.train.size(), cfg_.training.shuffle, cfg_.training.seed, epoch);
    // NaN/Inf in the summed gradients: tallied on the device and read at each
    // progress report (StepGuard), so no step waits for it. Under fp16 the
    // loss scaler takes each verdict on the device too (an overflow halves the
    // scale and skips the step; only at scale 1 is it divergence).
    StepGuard& guard = r.guard();
    guard.reset();
    if (scaler.enabled()) scaler.reset_counts();
    const bool sticky = !skip_nonfinite;  // stop: no update lands after the bad step
    // The step itself (train/step.hpp: forward, backward, all-reduce, guard,
    // fp16's loss scale, update), the same one `gputrain bench` times.
    Step train_step(cfg_, r, scaler, sticky);
    std::shared_ptr<const data::Batch> next;  // staged while the step before computed (GPU)
    for (int64_t step = start_step; step < steps_per_epoch_; ++step) {
        auto batch = next ? std::move(next) : loader.get(step);
        next.reset();
        const int64_t begin = batch->shard_begin[r.rank()], end = batch->shard_begin[r.rank() + 1];
        r.load_training_shard(*batch, cfg_.training.step_batch());
        const int64_t global_step = epoch_first_step + step;
        dist::note_step(epoch + 1, step + 1);  // what the stall watchdog names
        // The step's work is queued on the backend, the same from step to step
        // for one shape, so that a GPU records it once and replays it (StepGraphs).
        train_step.run({epoch, step, global_step, schedule.learning_rate(global_step, epoch, step), begin,
                        static_cast<int>(end - begin), batch->size, schedule.momentum(epoch, step)});
        // The next step's shard is copied while this step's work runs on the GPU.
        if (r.stages_ahead() && step + 1 < steps_per_epoch_) {
            next = loader.get(step + 1);
            r.stage_training_shard(*next);
        }
        samples += batch->size;
        bool report = (step + 1) % report_every_ == 0 || step + 1 == steps_per_epoch_;
        if (!report && (step + 1) % poll_every_ == 0) {
            // Between reports further apart than 1% of an epoch: do all
            // replicas agree that a signal came? Then this step reports, and stops.
            double signalled = pending_interrupt() != 0 ? 1.0 : 0.0;
            r.comm().allreduce_sum_host(&signalled, 1);
            report = signalled > 0;
        }
        if (report) {
            // Loss and correct counts differ per replica; the sample count is
            // already global. The third value is how every replica agrees to stop
            // after the same step when a signal arrived (in any process).
            math::LossScaleState s;  // fp16: read once per report
            if (scaler.enabled()) {  // overflows are the scaler's; divergence is a step at scale 1
                s = scaler.read();
                if (s.divergences > 0 && !skip_nonfinite)
                    throw NonFiniteGradients(epoch, start_step + s.first_divergence - 1);
                if (r.rank() == 0) {
                    totals.skipped_steps = s.divergences;
                    totals.overflow_steps = s.overflows;
                }
            } else {
                const StepGuard::Tally tally = guard.read();
                if (tally.bad_steps > 0 && !skip_nonfinite)
                    throw NonFiniteGradients(epoch, start_step + tally.first_bad);
                if (r.rank() == 0) totals.skipped_steps = tally.bad_steps;
            }
            double chunk[2];
            r.read_stats(chunk[0], chunk[1]);
            r.reset_stats();
            folded[0] += chunk[0];
            folded[1] += chunk[1];
            double reduced[3] = {folded[0], folded[1], pending_interrupt() != 0 ? 1.0 : 0.0};
            r.comm().allreduce_sum_host(reduced, 3);
            const bool last = step + 1 == steps_per_epoch_;
            const bool stop = reduced[2] > 0;
            // fp16: an epoch whose every step overflowed while the loss itself
            // is NaN/Inf has not been calibrating its scale: the forward pass
            // diverged (the scale only touches backward). The weights are the
            // epoch's first, since no step was applied.
            if (scaler.enabled() && last && !skip_nonfinite && !std::isfinite(earlier[0] + reduced[0]) &&
                s.steps > 0 && s.overflows + s.divergences == s.steps)
                throw NonFiniteGradients(epoch, start_step);
            if (&r == replicas_[0].get()) {  // every worker keeps the global sums
                totals.loss_sum = earlier[0] + reduced[0];
                totals.correct = earlier[1] + reduced[1];
                totals.samples = earlier[2] + static_cast<double>(samples);
                totals.steps_done = step + 1;
                totals.interrupted = stop && !last;
                totals.stop_after_epoch = stop && last;
            }
            if (r.rank() == 0) {
                const double loss = (earlier[0] + reduced[0]) / (earlier[2] + samples);
                const double metric = (earlier[1] + reduced[1]) / (earlier[2] + samples);
                progress_.update(step + 1, {{"loss", loss}, {metric_name_, metric}});
                if (tensorboard.enabled()) {
                    const auto now = std::chrono::steady_clock::now();
                    const double seconds = std::chrono::duration<double>(now - reported_at).count();
                    const double throughput =
                        seconds > 0 ? static_cast<double>(samples - samples_reported) / seconds : 0.0;
                    tensorboard.write(
                        StepRecord{global_step + 1, loss, metric, schedule.learning_rate(global_step, epoch, step), throughput});
                    reported_at = now;
                    samples_reported = samples;
                }
            }
            if (stop && !last) return;
        }
    }
}

std::vector<double> Trainer::sum_over_workers(std::vector<double> values) {
    run_on_replicas(replicas_, [&](Replica& r) {
        std::vector<double> mine = &r == replicas_[0].get() ? values : std::vector<double>(values.size(), 0.0);
        r.comm().allreduce_sum_host(mine.data(), mine.size());
        if (&r == replicas_[0].get()) values = mine;
    });
    return values;
}

bool Trainer::stop_agreed(bool mine) {
    // Workers decide from the same all-reduced metrics; should a rounding of
    // the reduction ever differ between processes, one that stopped alone
    // would leave the others waiting in the next epoch's first collective.
    if (replicas_[0]->comm().size() == static_cast<int>(replicas_.size())) return mine;
    return sum_over_workers({mine ? 1.0 : 0.0})[0] > 0;
}

Metadata Trainer::callbacks_metadata() const {
    Metadata metadata;
    for (const auto& c : callbacks_) c->save(metadata);
    return metadata;
}

void Trainer::info(const std::string& line) {
    if (writer_ && options_.info) std::fprintf(options_.out, "%s\n", line.c_str());
}

void Trainer::require_same_state_on_workers() {
    if (replicas_[0]->comm().size() == static_cast<int>(replicas_.size())) return;
    const TrainingState& s = state_;
    char numbers[256];
    std::snprintf(numbers, sizeof numbers, "%lld %lld %lld %.17g %.17g %.17g %.17g %lld", (long long)s.epochs_done,
                  (long long)s.global_step, (long long)s.step_in_epoch, s.partial_loss_sum, s.partial_correct,
                  s.partial_samples, s.loss_scale, (long long)s.loss_scale_good_steps);
    std::string text = numbers;
    for (const auto& [key, value] : callbacks_metadata()) text += " | " + key + "=" + value;
    const uint64_t hash = std::stoull(config::fnv1a64_hex(text), nullptr, 16);
    // The same value on every worker exactly when n * sum(c^2) == sum(c)^2
    // for each 16-bit part c of the hash (exact in doubles for up to 2^20 workers).
    std::vector<double> parts{1.0};
    for (int i = 0; i < 4; ++i) {
        const double c = static_cast<double>((hash >> (16 * i)) & 0xffff);
        parts.push_back(c);
        parts.push_back(c * c);
    }
    const std::vector<double> sums = sum_over_workers(parts);
    bool same = true;
    for (size_t i = 1; i < sums.size(); i += 2) same = same && sums[0] * sums[i + 1] == sums[i] * sums[i];
    if (same) return;
    const std::string here = options_.resume_from.empty()
                                 ? std::string("a fresh start")
                                 : options_.resume_from + " at epoch " + std::to_string(s.epochs_done) + ", step " +
                                       std::to_string(s.global_step);
    throw dist::WorkersDisagree("the workers go on from different training states (this worker's: " + here +
                      "); start every worker with the same --resume checkpoint, or all without one");
}

std::string Trainer::resume_command() const {
    return options_.resume_command.empty() ? "gputrain fit " + cfg_.source_file + " --resume" : options_.resume_command;
}

void Trainer::stop_interrupted(int64_t epoch, const EpochTotals& totals, double learning_rate,
                               Checkpointer& checkpointer) {
    const int signal = pending_interrupt() != 0 ? pending_interrupt() : SIGTERM;
    progress_.abandon_epoch();
    TrainingState st = state_;
    st.step_in_epoch = totals.steps_done;
    st.partial_loss_sum = totals.loss_sum;
    st.partial_correct = totals.correct;
    st.partial_samples = totals.samples;
    EpochRecord partial;
    partial.epoch = epoch + 1;
    partial.loss = totals.loss_sum / totals.samples;
    partial.metric = totals.correct / totals.samples;
    partial.learning_rate = learning_rate;  // the epoch's, as a finished epoch's record has
    const std::string path = replicas_[0]->rank() == 0
                                 ? checkpointer.save_interrupted(*replicas_[0], st, partial, callbacks_metadata(), signal_name(signal))
                                 : checkpointer.last_path();
    throw Interrupted("interrupted by " + signal_name(signal) + " at epoch " + std::to_string(epoch + 1) + ", step " +
                          std::to_string(totals.steps_done) + "/" + std::to_string(steps_per_epoch_) +
                          "; checkpoint written to " + path + "; continue with: " + resume_command(),
                      signal);
}

// best.safetensors must hold the best epoch so far of the training being
// resumed. After a resume from an older epoch (the folder's best is a later
// run's), into another folder, or with save_best newly on, it is missing or
// another's: the resumed checkpoint stands in when it is that best; else best
// starts over with this run's epochs.
void Trainer::restore_best_file(const Checkpointer& checkpointer, bool stale) {
    namespace fs = std::filesystem;
    if (!state_.has_best || !cfg_.checkpoint.save_best) return;
    const fs::path best = fs::path(checkpointer.dir()) / "best.safetensors";
    std::error_code ec;
    if (!stale && fs::exists(best, ec)) return;
    if (state_.holds_best && state_.step_in_epoch == 0) {
        if (!fs::equivalent(options_.resume_from, best, ec)) {
            const fs::path temp = best.string() + ".tmp-resume";
            fs::copy_file(options_.resume_from, temp, fs::copy_options::overwrite_existing, ec);
            if (!ec) fs::rename(temp, best, ec);
            if (ec) {
                fs::remove(temp, ec);
                throw Error("cannot write '" + best.string() + "' (a copy of " + options_.resume_from +
                            ", the best epoch so far): " + ec.message());
            }
        }
        if (options_.info)
            std::fprintf(options_.out, "best.safetensors: epoch %lld's (%s, the best so far)\n",
                         (long long)state_.epochs_done, options_.resume_from.c_str());
        return;
    }
    state_.has_best = false;
    if (options_.info)
        std::fprintf(options_.out, "best.safetensors starts over with this run's epochs (the best so far, by %s, "
                                   "is not in %s)\n",
                     state_.best_of.empty() ? "an earlier gputrain's monitor" : state_.best_of.c_str(),
                     options_.resume_from.c_str());
}

FitResult Trainer::fit() {
    FitResult result;
    // Every worker gathers the same seeded global batches; its replicas take
    // the shards of their global ranks.
    const int local_replicas = static_cast<int>(replicas_.size());
    const int global_replicas = replicas_[0]->comm().size();
    data::Loader loader(data_.train, cfg_.training.step_batch(), global_replicas, cfg_.training.shuffle,
                        cfg_.training.seed, /*prefetch_depth=*/4, local_replicas, cfg_.data.workers);
    loader.set_max_steps(cfg_.training.steps_per_epoch);
    // Only the worker holding global rank 0 writes files and logs.
    writer_ = replicas_[0]->rank() == 0;
    steps_per_epoch_ = loader.steps_per_epoch();
    if (cfg_.training.steps_per_epoch > steps_per_epoch_ && replicas_[0]->rank() == 0)
        warn("training.steps_per_epoch " + std::to_string(cfg_.training.steps_per_epoch) + " is more than the " +
             std::to_string(steps_per_epoch_) + " batches of one pass over the training set: an epoch is those " +
             std::to_string(steps_per_epoch_));
    poll_every_ = std::max<int64_t>(1, steps_per_epoch_ / 100);
    report_every_ = cfg_.logging.every_steps > 0 ? cfg_.logging.every_steps
                                                 : std::max<int64_t>(1, steps_per_epoch_ / 100);
    Checkpointer checkpointer(cfg_, options_.run_dir);
    if (writer_) checkpointer.prepare(checkpoint_bytes(*replicas_[0]));
    const bool has_validation = data_.validation.size() > 0;
    const MonitoredMetric best_metric = checkpointer.best_metric(has_validation);
    auto early = std::make_unique<EarlyStoppingCallback>(cfg_.early_stopping, has_validation);
    auto plateau = std::make_unique<ReduceLrCallback>(cfg_.reduce_lr_on_plateau, has_validation,
                                                      cfg_.optimizer.learning_rate);
    early_ = early.get();
    plateau_ = plateau.get();
    callbacks_.clear();
    callbacks_.push_back(std::move(early));
    callbacks_.push_back(std::move(plateau));

    const bool resuming = !options_.resume_from.empty();
    std::string resume_warning;
    bool stale_best_file = false;  // best.safetensors is a later run's (a resume from an older epoch)
    if (resuming) resume(checkpointer, best_metric, resume_warning, stale_best_file);
    else require_same_state_on_workers();
    // A resume with no epoch left to train touches no file: all epochs done,
    // or a run that early stopping ended (with the patience it has now).
    const bool stopped_before = early_->stops(state_.epochs_done);
    if (stopped_before) result.stopped_early = early_->reason();
    const bool nothing_to_do = state_.epochs_done >= cfg_.training.epochs || stopped_before;
    if (writer_ && resuming && !nothing_to_do) restore_best_file(checkpointer, stale_best_file);

    // The logs open first: a metrics file or TensorBoard folder that cannot be
    // written stops the run before on_start deletes an earlier run's
    // checkpoints (--overwrite) or rewrites config.yaml.
    const bool logs = writer_ && !nothing_to_do;
    MetricsFile metrics(cfg_.logging.metrics_file.empty() || !logs
                            ? std::string()
                            : (std::filesystem::path(options_.run_dir) / cfg_.logging.metrics_file).string(),
                        /*append=*/resuming, state_.epochs_done, metric_name_, bits_name());
    TensorBoardWriter tensorboard(cfg_.logging.tensorboard && logs
                                      ? (std::filesystem::path(options_.run_dir) / "tensorboard").string()
                                      : std::string(),
                                  state_.epochs_done, state_.global_step, metric_name_, bits_name());
    if (!metrics.warning().empty()) warn(metrics.warning());
    // A fresh run starts its metrics file anew: one outside the checkpoint
    // folder may be another run's (a shared logging.metrics_file).
    if (metrics.replaced_rows() > 0) {
        namespace fs = std::filesystem;
        const fs::path inside = fs::absolute(metrics.path()).lexically_normal().lexically_relative(
            fs::absolute(options_.run_dir).lexically_normal());
        if (inside.empty() || *inside.begin() == "..")
            warn("metrics file '" + metrics.path() + "' held " + std::to_string(metrics.replaced_rows()) +
                 " rows of an earlier run: replaced by this run's (a fresh fit starts it anew; give each run its "
                 "own logging.metrics_file)");
    }
    if (logs && options_.on_start)
        options_.on_start(resume_warning);
    else if (writer_ && nothing_to_do && options_.on_start && !resume_warning.empty())
        warn(resume_warning);

    continue_epoch_steps();
    // The schedule from a base rate: optimizer.learning_rate until reduce_lr_on_plateau lowers it.
    const auto schedule_from = [&](double base_rate) {
        config::OptimizerConfig optimizer = cfg_.optimizer;
        optimizer.learning_rate = base_rate;
        return optim::Schedule(optimizer, steps_per_epoch_, cfg_.training.epochs, state_.epoch_steps);
    };
    optim::Schedule schedule = schedule_from(plateau_->learning_rate());
    prepare_replicas(loader);

    for (int64_t epoch = state_.epochs_done; epoch < cfg_.training.epochs && !stopped_before; ++epoch) {
        const auto start = std::chrono::steady_clock::now();
        // The epoch's rate: at its first step, also when it resumes in the middle.
        const double lr = schedule.learning_rate(state_.global_step - state_.step_in_epoch, epoch, 0);
        const int64_t start_step = state_.step_in_epoch;
        const double samples_before = state_.partial_samples;  // of an epoch resumed in the middle
        const EpochTotals totals = train_epoch(epoch, lr, loader, schedule, checkpointer, tensorboard);
        count_epoch(epoch, start_step, totals);
        const EpochRecord rec = record_epoch(epoch, start_step, samples_before, lr, totals, start);

        EpochDecision decision;
        const bool is_best = after_epoch(rec, best_metric, decision);
        if (decision.learning_rate) schedule = schedule_from(*decision.learning_rate);  // the checkpoint holds it
        for (const std::string& note : decision.notes) info("Epoch " + std::to_string(epoch + 1) + ": " + note);
        metrics.write(rec);
        tensorboard.write(rec);
        if (writer_) {
            auto written = checkpointer.save_epoch(*replicas_[0], state_, rec, callbacks_metadata(), is_best,
                                                   decision.stop);
            result.checkpoints.insert(result.checkpoints.end(), written.begin(), written.end());
        }
        result.history.push_back(rec);
        last_good_checkpoint_ = checkpointer.last_path();
        if (decision.stop) {
            report_early_stop(epoch, best_metric, checkpointer, result);
            break;
        }
        // A signal seen at the epoch's last step: the epoch is saved, stop here.
        // (One that arrives during validation or the checkpoint write is seen
        // at the next epoch's first progress update.)
        if (totals.stop_after_epoch && epoch + 1 < cfg_.training.epochs) {
            const int signal = pending_interrupt() != 0 ? pending_interrupt() : SIGTERM;
            throw Interrupted("interrupted by " + signal_name(signal) + " after epoch " + std::to_string(epoch + 1) +
                                  "; checkpoint written to " + checkpointer.last_path() +
                                  "; continue with: " + resume_command(),
                              signal);
        }
    }
    result.epochs_done = state_.epochs_done;
    return result;
}

void Trainer::resume(Checkpointer& checkpointer, const MonitoredMetric& best_metric, std::string& resume_warning,
                     bool& stale_best_file) {
    state_ = restore(options_.resume_from, replicas_, cfg_, /*with_optimizer=*/true, &resume_warning);
    // A text's ids mean its characters: training on with another text's would teach other meanings.
    if (data_.train.text && data_.train.tokenizer == config::Tokenizer::sentencepiece) {
        const auto stored = state_.metadata.find("vocabulary");
        if (stored != state_.metadata.end() && stored->second != data::vocabulary_metadata(data_.train))
            throw DataError(options_.resume_from + ": trained with another SentencePiece model, so its token ids "
                            "would mean other pieces; resume with the model (data.tokenizer_model or the text for "
                            "data.vocab_size) it was trained with");
    }
    if (data_.train.text && data_.train.tokenizer == config::Tokenizer::chars) {
        const auto stored = state_.metadata.find("vocabulary");
        if (stored != state_.metadata.end() && stored->second != data::vocabulary_utf8(data_.train.vocabulary))
            throw DataError(options_.resume_from + ": trained on a text of other characters (" +
                            std::to_string(data::vocabulary_from_utf8(stored->second).size()) + " in its vocabulary, " +
                            std::to_string(data_.train.vocabulary.size()) + " in this one's), so its token ids "
                            "would mean other characters; resume on the text it was trained on");
    }
    const MetadataReader metadata(state_.metadata, options_.resume_from, state_.epochs_done);
    std::vector<std::string> notes;
    for (auto& c : callbacks_)
        for (std::string& line : c->restore(metadata)) notes.push_back(std::move(line));
    require_same_state_on_workers();  // before anything is written
    if (writer_ && !resume_warning.empty() && !options_.on_start) warn(resume_warning);
    if (state_.loss_scale > 0)
        for (auto& s : scalers_) s->restore(state_.loss_scale, state_.loss_scale_good_steps);
    info("Resuming from " + options_.resume_from + " after epoch " + std::to_string(state_.epochs_done) + " (step " +
         std::to_string(state_.global_step) + ")");
    last_good_checkpoint_ = options_.resume_from;
    // A resume from an older epoch: what a run past it left in the folder.
    if (writer_) {
        const std::vector<std::string> later = checkpointer.files_past(state_.epochs_done);
        if (!later.empty()) {
            std::string list;
            for (size_t i = 0; i < later.size(); ++i) list += (i ? ", " : "") + later[i];
            stale_best_file = later.back() == "best.safetensors";
            warn("--resume from epoch " + std::to_string(state_.epochs_done) + ": " + checkpointer.dir() +
                 " holds checkpoints of a run that went past it (" + list + "); epoch files are left as they "
                 "are and not counted by keep_last" +
                 (stale_best_file ? ", and best.safetensors is not this run's best (see below)" : ""));
        }
    }
    // A best of another metric (checkpoint.monitor or mode changed, or
    // validation added) cannot be compared with this run's values.
    if (state_.has_best && !state_.best_of.empty() && state_.best_of != best_metric.describe()) {
        info("The best so far was by " + state_.best_of + "; now by " + best_metric.describe() +
             ": best.safetensors starts over");
        state_.has_best = false;
    }
    for (const std::string& note : notes) info(note);
    // In the middle of an epoch, the steps done were whole global batches:
    // another batch size would start at another sample, skipping or
    // repeating some of the epoch's.
    const double batch = static_cast<double>(cfg_.training.step_batch());
    if (state_.step_in_epoch > 0 && state_.partial_samples != static_cast<double>(state_.step_in_epoch) * batch)
        throw ConfigError(options_.resume_from + ": stopped at step " + std::to_string(state_.step_in_epoch) +
                          " of an epoch, after " + std::to_string(static_cast<int64_t>(state_.partial_samples)) +
                          " samples: batches of " +
                          std::to_string(static_cast<int64_t>(state_.partial_samples) / state_.step_in_epoch) +
                          ", not " +
                          (cfg_.training.accumulate_steps > 1
                               ? "training.batch_size x accumulate_steps " + std::to_string(cfg_.training.step_batch())
                               : "training.batch_size " + std::to_string(cfg_.training.batch_size)) +
                          "; resume with that batch size to finish this epoch (a resume from the end of an epoch "
                          "may change it)");
    if (state_.step_in_epoch >= steps_per_epoch_)
        throw ConfigError(options_.resume_from + ": stopped at step " + std::to_string(state_.step_in_epoch) +
                          " of an epoch that now has " + std::to_string(steps_per_epoch_) +
                          " steps; resume with the training.batch_size and data it was written with");
}

void Trainer::continue_epoch_steps() {
    // A checkpoint of an earlier gputrain stored none: its epochs had the same
    // count if it divides the steps done, else take this run's.
    if (state_.epoch_steps.empty()) {
        const int64_t done = state_.global_step - state_.step_in_epoch;
        const int64_t epochs = state_.epochs_done;
        state_.epoch_steps = {{0, epochs > 0 && done > 0 && done % epochs == 0 ? done / epochs : steps_per_epoch_}};
    }
    state_.epoch_steps = optim::continued_at(state_.epoch_steps, state_.epochs_done, steps_per_epoch_);
    if (data_.train.text) {
        state_.tokenizer = config::name_of(data_.train.tokenizer);
        state_.vocabulary = data::vocabulary_metadata(data_.train);
    }
}

void Trainer::prepare_replicas(data::Loader& loader) {
    // data.resident: before any collective runs (it allocates device memory).
    // A worker's part (data.shard_files) is gathered by the loader in its own
    // order, which the resident index does not follow: copy its batches instead.
    const config::ResidentMode resident =
        data_.train.part.count > 1 ? config::ResidentMode::off : cfg_.data.resident;
    bool all_resident = true;
    for (auto& r : replicas_) all_resident = r->make_resident(data_.train, resident) && all_resident;
    // Replicas that copy their own rows need no loader thread gathering batches.
    loader.set_index_only(all_resident);
    for (auto& r : replicas_) r->graphs().set_enabled(step_graphs_unusable(cfg_, *r).empty());
}

Trainer::EpochTotals Trainer::train_epoch(int64_t epoch, double learning_rate, data::Loader& loader,
                                          const optim::Schedule& schedule, Checkpointer& checkpointer,
                                          TensorBoardWriter& tensorboard) {
    const int64_t start_step = state_.step_in_epoch;
    progress_.begin_epoch(epoch, cfg_.training.epochs, steps_per_epoch_, start_step);
    loader.start_epoch(epoch, start_step);
    if (start_step > 0)
        info("Continuing epoch " + std::to_string(epoch + 1) + " after step " + std::to_string(start_step) + "/" +
             std::to_string(steps_per_epoch_));
    EpochTotals totals;
    try {
        run_on_replicas(replicas_, [&](Replica& r) {
            run_epoch(r, epoch, start_step, loader, schedule, totals, tensorboard);
        });
    } catch (const NonFiniteGradients& e) {
        progress_.abandon_epoch();
        throw Error("training diverged: NaN or Inf in the gradients at epoch " + std::to_string(e.epoch + 1) +
                    ", step " + std::to_string(e.step + 1) + "/" + std::to_string(steps_per_epoch_) +
                    (last_good_checkpoint_.empty() ? "; no checkpoint was written yet"
                                                   : "; the last good checkpoint is " + last_good_checkpoint_) +
                    "; lower optimizer.learning_rate, or set training.on_nan: skip_step to skip such steps");
    }
    if (totals.interrupted) {
        state_.global_step += totals.steps_done - start_step;
        record_loss_scale();
        stop_interrupted(epoch, totals, learning_rate, checkpointer);
    }
    return totals;
}

void Trainer::count_epoch(int64_t epoch, int64_t start_step, const EpochTotals& totals) {
    state_.global_step += steps_per_epoch_ - start_step;
    state_.epochs_done = epoch + 1;
    record_loss_scale();
    state_.step_in_epoch = 0;
    state_.partial_loss_sum = state_.partial_correct = state_.partial_samples = 0;
    // Recording a step failed (some call could not be recorded): say so once; the steps ran call by call.
    if (writer_ && !graphs_warned_ && !replicas_[0]->graphs().failure().empty()) {
        graphs_warned_ = true;
        warn(replicas_[0]->graphs().failure() +
             "; steps run call by call from there on (training.cuda_graphs: false skips the attempt)");
    }
    if (totals.overflow_steps > 0) {  // fp16: routine at the start, as the scale finds its level
        char scale[32];
        std::snprintf(scale, sizeof scale, "%g", static_cast<double>(scalers_[0]->read().scale));
        info("epoch " + std::to_string(epoch + 1) + ": " + std::to_string(totals.overflow_steps) + " step" +
             (totals.overflow_steps == 1 ? "" : "s") + " overflowed in fp16 and " +
             (totals.overflow_steps == 1 ? "was" : "were") + " skipped; loss scale now " + scale);
    }
    if (totals.skipped_steps > 0 && writer_)
        warn("epoch " + std::to_string(epoch + 1) + " skipped " + std::to_string(totals.skipped_steps) + " step" +
             (totals.skipped_steps == 1 ? "" : "s") + " with NaN or Inf gradients (training.on_nan: skip_step)");
}

EpochRecord Trainer::record_epoch(int64_t epoch, int64_t start_step, double samples_before, double learning_rate,
                                  const EpochTotals& totals, std::chrono::steady_clock::time_point start) {
    const double train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EpochRecord rec;
    rec.epoch = epoch + 1;
    rec.loss = totals.loss_sum / totals.samples;
    rec.metric = totals.correct / totals.samples;
    rec.learning_rate = learning_rate;
    // The samples this process trained on (a resumed epoch's later steps
    // only). A worker's part (data.shard_files) is not the epoch: every
    // step of it is a full global batch.
    const double run_samples = data_.train.part.count > 1
                                   ? static_cast<double>((steps_per_epoch_ - start_step) * cfg_.training.step_batch())
                                   : totals.samples - samples_before;
    rec.samples_per_second = run_samples / train_seconds;
    MetricList shown{{"loss", rec.loss}, {metric_name_, rec.metric}};
    if (data_.validation.size() > 0) {
        // training.ema with evaluate: validation scores the averaged weights
        // (so does best.safetensors' choice), then training goes on with its own.
        const bool ema = cfg_.training.ema.enabled && cfg_.training.ema.evaluate;
        if (ema) run_on_replicas(replicas_, [](Replica& r) { r.use_ema_weights(true); });
        const EvalResult v = evaluate(replicas_, data_.validation, cfg_.training.batch_size);
        if (ema) run_on_replicas(replicas_, [](Replica& r) { r.use_ema_weights(false); });
        rec.has_validation = true;
        rec.val_loss = v.loss;
        rec.val_metric = v.metric;
        shown.push_back({"val_loss", v.loss});
        shown.push_back({"val_" + metric_name_, v.metric});
    }
    // A language model's loss also as perplexity and bits per token
    // (per character or byte, as the tokenizer reads the text).
    if (data_.train.text) {
        const double loss = rec.has_validation ? rec.val_loss : rec.loss;
        const std::string prefix = rec.has_validation ? "val_" : "";
        shown.push_back({prefix + "ppl", std::exp(loss)});
        shown.push_back({prefix + bits_name(), loss / std::log(2.0)});
    }
    rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress_.end_epoch(shown, rec.seconds);
    return rec;
}

bool Trainer::after_epoch(const EpochRecord& record, const MonitoredMetric& best_metric, EpochDecision& decision) {
    // A NaN best (a first epoch whose loss was NaN) is no best, as on restore.
    const double value = best_metric.value_of(record);
    const bool is_best =
        !state_.has_best || std::isnan(state_.best_value) || best_metric.beats(value, state_.best_value);
    if (is_best) {
        state_.has_best = true;
        state_.best_value = value;
        state_.best_of = best_metric.describe();
    }
    for (auto& c : callbacks_) c->after_epoch(record, decision);
    decision.stop = stop_agreed(decision.stop);
    return is_best;
}

void Trainer::report_early_stop(int64_t epoch, const MonitoredMetric& best_metric, const Checkpointer& checkpointer,
                                FitResult& result) {
    // Another worker's vote (whose metrics differed from this one's) may have stopped it.
    result.stopped_early = early_->stops(state_.epochs_done)
                               ? early_->reason()
                               : "another worker's count of epochs without improvement reached patience";
    // Where the best weights are: best.safetensors keeps its own best
    // (checkpoint.monitor, any improvement), which need not be the epoch
    // early stopping names (min_delta, start_from_epoch, resumes).
    std::string best_file;
    if (writer_ && cfg_.checkpoint.save_best)
        if (const int64_t best_epoch = checkpointer.best_file_epoch(); best_epoch > 0)
            best_file = "; best.safetensors holds epoch " + std::to_string(best_epoch) + "'s weights" +
                        (best_epoch == early_->state().best_epoch &&
                                 best_metric.describe() == early_->rule().metric().describe()
                             ? std::string()
                             : " (the best by checkpoint.monitor, " + best_metric.describe() + ")");
    info("Epoch " + std::to_string(epoch + 1) + ": early stopping: " + result.stopped_early + best_file);
}

}  // namespace gputrain::train
