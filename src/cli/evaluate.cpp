// gputrain evaluate CONFIG: score a checkpoint on the test set.
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "checkpoint/json.hpp"
#include "dist/launch_env.hpp"
#include "cli/run_setup.hpp"
#include "cli/workers.hpp"
#include "config/resolved_yaml.hpp"
#include "dist/process_group.hpp"
#include "core/error.hpp"
#include "core/utf8.hpp"
#include "data/dataset.hpp"
#include "data/text_reader.hpp"
#include "device/devices.hpp"
#include "train/checkpointer.hpp"
#include "train/evaluator.hpp"

namespace fs = std::filesystem;

namespace gputrain::cli {

namespace {

struct EvaluateArgs {
    CommonOptions common;
    std::string checkpoint;
    bool json = false;
    bool confusion = false;
    std::string tta;  // "" or "flip"
};

// JSON is Unicode: a path's bytes that are not UTF-8 are read as Latin-1.
std::string json_string(const std::string& s) { return checkpoint::json::quote(as_utf8(s)); }

// JSON has no NaN or infinity: a loss that is not finite (weights that
// overflow on the test set) is null.
std::string json_number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6f", v);
    return buf;
}

// `metric`: its name (RunConfig::metric: accuracy, mae or mse).
void print_json(const train::EvalResult& r, const std::string& metric, const std::string& checkpoint, bool confusion,
                bool ema) {
    std::printf("{\"loss\": %s, \"%s\": %s, \"samples\": %lld, \"checkpoint\": %s", json_number(r.loss).c_str(),
                metric.c_str(), json_number(r.metric).c_str(), (long long)r.samples, json_string(checkpoint).c_str());
    if (ema) std::printf(", \"weights\": \"ema\"");
    if (confusion) {
        std::printf(", \"confusion\": [");
        for (int64_t i = 0; i < r.classes; ++i) {
            std::printf("%s[", i ? ", " : "");
            for (int64_t j = 0; j < r.classes; ++j)
                std::printf("%s%lld", j ? ", " : "", (long long)r.confusion[static_cast<size_t>(i * r.classes + j)]);
            std::printf("]");
        }
        std::printf("]");
    }
    std::printf("}\n");
}

void print_confusion(const train::EvalResult& r) {
    std::printf("Confusion matrix (rows: true class, columns: predicted)\n      ");
    for (int64_t j = 0; j < r.classes; ++j) std::printf("%6lld", (long long)j);
    std::printf("\n");
    for (int64_t i = 0; i < r.classes; ++i) {
        std::printf("%6lld", (long long)i);
        for (int64_t j = 0; j < r.classes; ++j)
            std::printf("%6lld", (long long)r.confusion[static_cast<size_t>(i * r.classes + j)]);
        std::printf("\n");
    }
}

// One worker's scoring: with `world` (multi_worker_mirrored under a
// launcher) its replicas score their part of every batch and the sums are
// reduced across workers; without, the process scores the whole test set.
int evaluate_worker(EvaluateArgs& args, config::RunConfig& cfg, dist::World* world);

int run_evaluate(EvaluateArgs& args) {
    config::RunConfig cfg = load_config(args.common, args.checkpoint);
    apply_log_level(cfg, args.json);
    // --tta flip is scored by one replica, and a single-process strategy by
    // one process: then each process scores the whole set alone.
    std::unique_ptr<dist::World> world =
        args.tta.empty() && cfg.strategy.type == config::StrategyType::multi_worker_mirrored ? join_workers(cfg)
                                                                                             : nullptr;
    return run_as_worker(world.get(), [&] { return evaluate_worker(args, cfg, world.get()); });
}

int evaluate_worker(EvaluateArgs& args, config::RunConfig& cfg, dist::World* world) {
    // Under a launcher rank 0 prints the result, the others only their errors.
    const bool prints = world ? world->rank() == 0 : dist::launcher_rank() == 0;
    if (!prints) spdlog::set_level(spdlog::level::err);

    std::string path = args.checkpoint;
    if (path.empty()) {
        const fs::path best = fs::path(cfg.checkpoint.dir) / "best.safetensors";
        path = fs::exists(best) ? best.string() : train::latest_checkpoint(cfg.checkpoint.dir);
        if (path.empty())
            throw ConfigError("no checkpoint in '" + cfg.checkpoint.dir +
                              "' (best.safetensors, last.safetensors, epoch-NNN.safetensors); run 'gputrain fit' "
                              "first or pass --checkpoint PATH");
    } else {
        require_checkpoint_file("--checkpoint", path);
    }

    if (cfg.data.format == config::DataFormat::text && (args.confusion || !args.tta.empty()))
        throw ConfigError(std::string(args.confusion ? "--confusion" : "--tta") +
                          ": not for a model of format text (a label at every position); leave it out");
    const device::Discovery found = device::discover();
    const train::Strategy strategy(cfg, found, {args.common.device, args.common.replicas, world});
    if (!strategy.fallback_note().empty()) spdlog::info("{}", strategy.fallback_note());
    const data::DataSplits data = data::load_splits(cfg.data, cfg.model.input_shape, data::Need::test);
    auto replicas = strategy.make_replicas(cfg, cfg.training.batch_size, path, train::ReplicaUse::inference);
    check_classes(data.test, replicas[0]->model().classes(), cfg, replicas[0]->model().positions());
    const train::TrainingState trained = train::restore(path, replicas, cfg, /*with_optimizer=*/false);
    warn_if_trained_differently(path, trained.config_yaml, cfg);
    // Token ids mean the characters of the vocabulary the model was trained on.
    if (data.test.text && data.test.tokenizer == config::Tokenizer::sentencepiece) {
        const auto stored = trained.metadata.find("vocabulary");
        if (stored != trained.metadata.end() && stored->second != data::vocabulary_metadata(data.test))
            throw DataError(path + ": trained with another SentencePiece model, so the token ids would mean other "
                            "pieces; evaluate it with the model it was trained with");
    }
    if (data.test.text && data.test.tokenizer == config::Tokenizer::chars) {
        const auto stored = trained.metadata.find("vocabulary");
        if (stored != trained.metadata.end() && stored->second != data::vocabulary_utf8(data.test.vocabulary))
            throw DataError(path + ": trained on a text of other characters (" +
                            std::to_string(data::vocabulary_from_utf8(stored->second).size()) + " in its vocabulary, " +
                            std::to_string(data.test.vocabulary.size()) + " in this one's), so the token ids would "
                            "mean other characters; evaluate it on the text it was trained on");
    }

    if (world && world->size() > 1) {
        // Each worker reads its own copy of the test set and the checkpoint
        // (paths may differ per host): they must hold the same, or the sums mix
        // different models and samples (and a worker with no samples would
        // leave the others waiting in the all-reduce).
        std::string seen = std::to_string(data.test.size()) + "x" + std::to_string(data.test.sample_elements()) + "\n";
        // The labels' bytes (class labels; a text's are its ids, not kept apart).
        seen += config::fnv1a64_hex(std::string(reinterpret_cast<const char*>(data.test.labels.data()),
                                                data.test.labels.size() * sizeof(int32_t))) + "\n";
        for (const auto& [key, value] : trained.metadata) seen += key + "=" + value + "\n";
        dist::require_same(*world, config::fnv1a64_hex(seen),
                           {"evaluate: ", "scores another test set or checkpoint", "score another test set or checkpoint",
                            "give every worker the same test data and checkpoint (their paths may differ)"});
    }
    const train::EvalResult result =
        args.tta.empty() ? train::evaluate(replicas, data.test, cfg.training.batch_size, args.confusion)
                         : train::evaluate_flip_tta(*replicas[0], data.test, cfg.loss.name, args.confusion);
    // Finite weights can still overflow on the test inputs: the outputs of
    // those samples are NaN, and their argmax (so accuracy and the confusion
    // matrix) says class 0.
    const std::string metric = cfg.metric();
    if (!std::isfinite(result.loss))
        spdlog::warn("warning: the loss is {}: the model's outputs overflowed on some test samples (weights or "
                     "inputs far out of range; check data.scale ({:g})){}",
                     std::isnan(result.loss) ? "NaN" : "infinite", cfg.data.scale,
                     data.test.real_targets ? "" : "; accuracy counts their predictions as class 0");
    if (!prints) return 0;
    if (args.json) {
        print_json(result, metric, path, args.confusion, trained.ema_weights);
    } else {
        std::printf("%s: loss %s - %s %.4f (%lld test samples%s)\n", path.c_str(),
                    std::isnan(result.loss) ? "nan" : fmt::format("{:.4f}", result.loss).c_str(), metric.c_str(),
                    result.metric,
                    (long long)result.samples,
                    (std::string(args.tta.empty() ? "" : ", each averaged with its mirror") +
                     (world && world->size() > 1
                          ? fmt::format(", scored by {} workers x {} replica{}", world->size(), replicas.size(),
                                        replicas.size() == 1 ? "" : "s")
                          : "") +
                     (trained.ema_weights ? "; the weights' moving average, training.ema" : ""))
                        .c_str());
        if (args.confusion) print_confusion(result);
        if (cfg.data.format == config::DataFormat::text)  // positions, not samples, are what the loss averages
            std::printf("  %lld tokens: perplexity %.4f, %.4f bits per %s\n",
                        (long long)(result.samples * replicas[0]->model().positions()), std::exp(result.loss),
                        result.loss / std::log(2.0),
                        cfg.data.tokenizer == config::Tokenizer::bytes   ? "byte"
                        : cfg.data.tokenizer == config::Tokenizer::chars ? "character"
                                                                         : "token");
    }
    return 0;
}

}  // namespace

Action add_evaluate_command(CLI::App& app) {
    auto args = std::make_shared<EvaluateArgs>();
    CLI::App* cmd = app.add_subcommand("evaluate", "Score a checkpoint on the test set (loss, and accuracy or mae/mse)");
    cmd->add_option("config", args->common.config_path,
                    "YAML config file the model was trained with (default: RUN_DIR/config.yaml with --run-dir, else "
                    "the config stored in --checkpoint)");
    auto* run_dir = cmd->add_option("--run-dir", args->common.run_dir,
                                    "Run folder whose best.safetensors (else its latest) is scored")
                        ->check(non_empty_path());
    cmd->add_option("--checkpoint", args->checkpoint, "Checkpoint file to score")
        ->check(non_empty_path())
        ->excludes(run_dir);
    cmd->add_option("--set", args->common.overrides, "Override a config key, e.g. --set data.test_limit=1000")
        ->allow_extra_args(false);
    cmd->add_option("--device", args->common.device, "auto, cpu or gpu")->check(CLI::IsMember({"auto", "cpu", "gpu"}));
    cmd->add_option("--replicas", args->common.replicas, "Number of CPU replicas (threads)")->check(replica_count());
    cmd->add_flag("--json", args->json, "Print one JSON object: loss, accuracy (mae or mse for real targets), samples, checkpoint (and confusion)");
    cmd->add_flag("--confusion", args->confusion, "Also print the confusion matrix");
    cmd->add_option("--tta", args->tta,
                    "Test-time augmentation: 'flip' averages the class probabilities of each image and its "
                    "horizontal mirror")
        ->check(CLI::IsMember({"flip"}));
    return [args] { return run_evaluate(*args); };
}

}  // namespace gputrain::cli
