// gputrain fit CONFIG: train, log, checkpoint.
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <set>
#include <filesystem>


#include "cli/commands.hpp"
#include "config/config_diff.hpp"
#include "config/config_source.hpp"
#include "cli/flag_checks.hpp"
#include "cli/run_dir_lock.hpp"
#include "cli/run_setup.hpp"
#include "cli/workers.hpp"
#include "core/error.hpp"
#include "data/dataset.hpp"
#include "device/devices.hpp"
#include "nn/resolve_layers.hpp"
#include "train/checkpointer.hpp"
#include "train/init_from.hpp"
#include "train/interrupt.hpp"
#include "train/run_dir.hpp"
#include "train/step_graphs.hpp"
#include "train/trainer.hpp"

namespace fs = std::filesystem;

namespace gputrain::cli {

namespace {

struct FitArgs {
    CommonOptions common;
    CLI::Option* resume = nullptr;
    std::string resume_path;
    bool quiet = false;
    bool overwrite = false;
};

// A word as a POSIX shell reads it back: as it is when it holds nothing the
// shell would act on, else in single quotes (a quote inside as '\'').
std::string shell_word(const std::string& word) {
    const bool plain = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                               "0123456789_./=:,+-@%") == std::string::npos;
    if (plain) return word;
    std::string quoted = "'";
    for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

// The command line that continues this run after an interrupt.
std::string resume_command(const FitArgs& args) {
    std::string cmd = "gputrain fit " + shell_word(args.common.config_path);
    if (!args.common.run_dir.empty()) cmd += " --run-dir " + shell_word(args.common.run_dir);
    for (const auto& o : args.common.overrides) cmd += " --set " + shell_word(o);
    if (!args.common.device.empty() && args.common.device != "auto") cmd += " --device " + args.common.device;
    if (args.common.replicas > 0) cmd += " --replicas " + std::to_string(args.common.replicas);
    return cmd + " --resume";
}

// --resume PATH with another run's checkpoint: one trained in another run
// dir, for another model or on other data. Resuming would continue that run's
// epochs and schedule under this config (and say "Nothing to do" when they are
// done); starting a new run from its weights is model.init_from's job: said so,
// before anything loads. Continuing the same run in a new folder (another
// --run-dir, a changed learning rate or epoch count) stays a resume.
void refuse_other_runs_checkpoint(const config::RunConfig& cfg, const std::string& path) {
    std::error_code ec;
    if (fs::weakly_canonical(path, ec).parent_path() == fs::weakly_canonical(cfg.checkpoint.dir, ec)) return;
    std::string stored;
    try {
        stored = train::checkpoint_config(path);
    } catch (const std::exception&) {
        return;  // restore() says what is wrong with the file
    }
    if (stored.empty()) return;
    const config::ConfigChanges diff = config::changed_keys(stored, cfg.resolved_yaml, nn::resolved_again);
    if (!diff.readable) return;
    config::ConfigChanges other;
    for (const std::string& c : diff.changes)
        if (c.rfind("model.", 0) == 0 || c.rfind("data.dataset", 0) == 0 || c.rfind("data.path", 0) == 0 ||
            c.rfind("data.format", 0) == 0)
            other.changes.push_back(c);
    if (other.changes.empty()) return;
    throw ConfigError("--resume " + path + ": that checkpoint is another run's (" + other.text(3) +
                      "), and --resume continues a run where it stopped; to start this run from its weights, drop "
                      "--resume and set model.init_from: " + path + " (or --set model.init_from=" + path + ")");
}

// One worker's training (the only one without an MPI launcher). Only the
// worker holding global rank 0 prints the summary and writes the run dir.
int train_worker(FitArgs& args, const config::RunConfig& cfg, dist::World* world,
                 std::chrono::steady_clock::time_point start) {
    const bool lead = !world || world->rank() == 0;
    const bool quiet = args.quiet || !lead;

    std::string resume_from;
    if (args.resume->count() > 0) {
        resume_from = args.resume_path.empty() ? train::latest_checkpoint(cfg.checkpoint.dir) : args.resume_path;
        if (resume_from.empty())
            throw ConfigError("--resume: no checkpoint in '" + cfg.checkpoint.dir +
                              "' (looked for last.safetensors and epoch-NNN.safetensors); train without --resume first");
        require_checkpoint_file("--resume", resume_from);
        if (!args.resume_path.empty()) refuse_other_runs_checkpoint(cfg, resume_from);
    }
    const train::EarlierRun earlier = lead && resume_from.empty() ? train::find_earlier_run(cfg) : train::EarlierRun{};
    if (!args.overwrite) train::refuse_earlier_run(earlier, cfg);  // at once, before the data loads

    const device::Discovery found = device::discover();
    const train::Strategy strategy(cfg, found, {args.common.device, args.common.replicas, world});
    if (!strategy.fallback_note().empty()) spdlog::info("{}", strategy.fallback_note());
    log_cpu_notes(cfg, strategy.on_gpu());

    // With data.shard_files each worker reads only its part of the training set.
    const data::DataSplits data = data::load_splits(cfg.data, cfg.model.input_shape, data::Need::train,
                                                    world ? world->rank() : 0, world ? world->size() : 1);
    if (data.train.size() == 0) throw ConfigError("data: the training set is empty (check data.limit)");
    // A text's samples are windows of its tokens: how far apart (data.sequence_stride) is said too.
    const std::string unit = data.train.text ? "window" : "sample";
    const auto count = [&](int64_t n, const std::string& what) {
        return std::to_string(n) + " " + what + " " + unit + (n == 1 ? "" : "s");
    };
    spdlog::info("Data: {}{}{}{}", count(data.train.size(), "training"),
                 data.train.text ? fmt::format(" of {} tokens every {}", data.train.sample_elements(),
                                               data.train.window_stride)
                                 : "",
                 data.validation.size() ? ", " + count(data.validation.size(), "validation") : "",
                 data.train.part.count > 1 ? "; " + data.train.description : "");

    // A val_* monitor without validation data watches the training metric (as
    // the Trainer resolves it): said once, with the key that turns validation on.
    if (lead && data.validation.size() == 0) {
        const auto fallback = [&](const char* key, config::Monitor m) {
            if (!config::is_validation(m)) return;
            const std::string train_metric = m == config::Monitor::val_loss ? "loss" : config::monitored_metric_name(m);
            spdlog::warn("warning: {} is {}, but there is no validation data, so it watches the training {}; set "
                         "data.validation_split (e.g. 0.1) to watch {}",
                         key, config::name_of(m), train_metric, config::name_of(m));
        };
        if (cfg.early_stopping.enabled) fallback("early_stopping.monitor", cfg.early_stopping.monitor);
        if (cfg.reduce_lr_on_plateau.enabled) fallback("reduce_lr_on_plateau.monitor", cfg.reduce_lr_on_plateau.monitor);
        if (cfg.checkpoint.save_best && cfg.checkpoint.monitor_given) fallback("checkpoint.monitor", cfg.checkpoint.monitor);
    }
    // training.ema that never starts averaging: its weights are the raw ones throughout.
    if (lead && cfg.training.ema.enabled && cfg.training.ema.start_epoch >= cfg.training.epochs)
        spdlog::warn("warning: training.ema.start_epoch is {}, but training stops after epoch {}: the average never "
                     "starts, so the EMA weights are the raw weights; lower start_epoch (epochs count from 0)",
                     cfg.training.ema.start_epoch, cfg.training.epochs);
    auto replicas = strategy.make_replicas(cfg, cfg.training.step_batch(), resume_from);
    check_classes(data.train, replicas[0]->model().classes(), cfg, replicas[0]->model().positions());
    // A language model's perplexity and samples mean nothing from outputs taken for probabilities.
    if (data.train.text && replicas[0]->model().probabilities_not_softmax())
        throw ConfigError(cfg.source_file + ": loss.from_logits is false, but the last layer does not end in "
                          "softmax: its scores would be read as probabilities; set loss.from_logits: true (as "
                          "configs/shakespeare_char_small.yaml does)");
    std::string layout = strategy.describe(cfg.training.step_batch());
    if (cfg.training.accumulate_steps > 1)
        layout += "; each optimizer step sums " + std::to_string(cfg.training.accumulate_steps) +
                  " micro-batches of " + std::to_string(cfg.training.batch_size) +
                  " (training.accumulate_steps), one all-reduce";
    spdlog::info("{}", layout);
    const nn::Model& model = replicas[0]->model();
    if (model.param_count() == 0) {
        bool frozen = false;
        for (size_t i = 0; i < model.layer_count(); ++i) frozen = frozen || model.frozen(i);
        throw ConfigError(config::config_message(
            cfg.model.layers_place.empty() ? cfg.source_file : cfg.model.layers_place, "model.layers",
            frozen ? "every layer with weights is frozen (trainable: false), so training would change nothing"
                   : "the model has no trainable parameters, so training would change nothing",
            frozen ? "leave at least one layer trainable" : "add a dense or conv2d layer"));
    }
    for (const std::string& w : model.warnings()) spdlog::warn("warning: {}", w);
    if (strategy.on_gpu()) spdlog::info("CUDA graphs: {}", train::step_graphs_note(cfg, *replicas[0]));
    // A resume of a run with every epoch done trains nothing: no model table
    // before its "Nothing to do" line.
    const bool all_epochs_done =
        !resume_from.empty() && train::checkpoint_epochs_done(resume_from) >= cfg.training.epochs;
    // model.init_from: a new run's weights (a resume takes its checkpoint's instead).
    std::optional<train::InitReport> loaded;
    if (resume_from.empty() && !cfg.model.init_from.empty()) loaded = train::init_from_file(cfg, replicas);
    if (!quiet && !all_epochs_done) {
        std::printf("%s", replicas[0]->model().summary(loaded ? loaded->layers : std::set<std::string>{}).c_str());
        if (loaded) std::printf("%s", train::init_summary_note(cfg, *loaded).c_str());
    }

    // A run dir this fit creates is removed again (with its lock file) when the
    // run fails before it writes anything, such as a resume whose checkpoint
    // does not load. Declared before the locks, so that it goes after them.
    train::NewRunDir new_run_dir(RunDirLock::file_name);
    std::vector<std::unique_ptr<RunDirLock>> locks;  // held until training ends
    if (lead) {
        new_run_dir.create(cfg.run_dir);
        locks.push_back(std::make_unique<RunDirLock>(cfg.run_dir, "--run-dir"));
        // The checkpoint folder too, when it is another folder (compared as
        // folders: "rs/", "./rs" and a link to rs are the run dir itself, and a
        // second lock on it would conflict with the first).
        std::error_code ec;
        fs::create_directories(cfg.checkpoint.dir, ec);
        if (!ec && !fs::equivalent(cfg.checkpoint.dir, cfg.run_dir, ec) && !ec)
            locks.push_back(std::make_unique<RunDirLock>(cfg.checkpoint.dir, "checkpoint.dir"));
    }

    train::FitOptions options;
    options.run_dir = cfg.checkpoint.dir;
    options.resume_from = resume_from;
    options.progress = train::progress_mode(cfg.logging.progress, stdout, quiet);
    options.info = !quiet;
    options.resume_command = resume_command(args);
    // Once the checkpoint has loaded: a failed resume leaves config.yaml alone.
    // --overwrite deletes the earlier run's checkpoints only then, once the data
    // and the model are known to work.
    if (lead)
        options.on_start = [&cfg, &new_run_dir, &earlier, resuming = !resume_from.empty()](const std::string& resume_warning) {
            new_run_dir.keep();  // what follows writes into it
            train::clear_earlier_run(earlier, cfg);  // --overwrite (without it: refused above)
            // The run dir's config.yaml and the checkpoint's usually say the same: one warning.
            if (!train::write_resolved_config(cfg, resuming) && !resume_warning.empty())
                spdlog::warn("warning: {}", resume_warning);
        };
    train::Trainer trainer(cfg, replicas, data, options);
    train::install_interrupt_handlers();
    const train::FitResult result = trainer.fit();

    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (result.history.empty() && !result.stopped_early.empty())
        spdlog::info("Nothing to do: early stopping ends this run after epoch {}: {}; to train on, raise "
                     "early_stopping.patience or pass --set early_stopping=false",
                     result.epochs_done, result.stopped_early);
    else if (result.history.empty())
        spdlog::info("Nothing to do: the checkpoint already has {} of {} epochs (raise training.epochs to continue)",
                     result.epochs_done, cfg.training.epochs);
    else {
        std::vector<std::string> notes;
        if (result.history.size() != static_cast<size_t>(result.epochs_done))
            notes.push_back(std::to_string(result.history.size()) + " in this run");
        if (!result.stopped_early.empty()) notes.push_back("stopped early");
        std::string note;
        for (const auto& n : notes) note += (note.empty() ? " (" : ", ") + n;
        if (!note.empty()) note += ")";
        spdlog::info("Done: {} epoch{}{} in {:.1f}s; checkpoints in {}", result.epochs_done,
                     result.epochs_done == 1 ? "" : "s", note,
                     seconds, cfg.checkpoint.dir);
    }
    // What one graph launch runs: with the epoch time, the cost of each operation of a step.
    const train::StepGraphs& graphs = replicas[0]->graphs();
    if (graphs.replays() > 0)
        spdlog::info("CUDA graphs: {} steps replayed; a full batch's step is {} operations (kernels and copies)",
                     graphs.replays(), graphs.first_graph_nodes());
    log_gemm_epilogues(cfg, replicas[0]->backend());
    return 0;
}

int run_fit(FitArgs& args) {
    const auto start = std::chrono::steady_clock::now();
    train::ignore_broken_pipes();
    config::RunConfig cfg = load_config(args.common);
    apply_log_level(cfg, args.quiet);
    // MPI_Finalize (the world's destructor) runs only after training returned
    // normally; a failing worker ends the job in run_as_worker instead.
    std::unique_ptr<dist::World> world = join_workers(cfg);
    return run_as_worker(world.get(), [&] { return train_worker(args, cfg, world.get(), start); });
}

}  // namespace

Action add_fit_command(CLI::App& app) {
    auto args = std::make_shared<FitArgs>();
    CLI::App* cmd = app.add_subcommand("fit", "Train the model a config describes; log metrics and write checkpoints");
    cmd->add_option("config", args->common.config_path, "YAML config file")->required();
    cmd->add_option("--run-dir", args->common.run_dir, "Folder for checkpoints, metrics.csv and the resolved config "
                                                       "(default: run_dir of the config, else runs/default)")
        ->check(non_empty_path());
    cmd->add_option("--set", args->common.overrides, "Override a config key, e.g. --set training.epochs=1 "
                                                     "(repeatable; validated like the file)")
        ->allow_extra_args(false);
    args->resume = cmd->add_option("--resume", args->resume_path,
                                   "Continue from CHECKPOINT, or without a value from the run dir's latest "
                                   "(last.safetensors)")
                       ->expected(0, 1);
    cmd->add_option("--device", args->common.device, "Where to train: auto (GPUs when present, else the CPU), cpu or gpu")
        ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
    cmd->add_option("--replicas", args->common.replicas, "Number of CPU replicas (threads) for mirrored training")
        ->check(replica_count());
    cmd->add_flag("--overwrite", args->overwrite,
                  "Start afresh in a run dir that holds an earlier run's checkpoints, deleting them (without it fit "
                  "refuses; --resume continues that run)")
        ->excludes(args->resume);
    cmd->add_flag("--quiet,-q", args->quiet, "No progress bar, summary or info lines; warnings and errors only");
    return [args] { return run_fit(*args); };
}

}  // namespace gputrain::cli
