// gputrain lr-find CONFIG: the learning-rate range test (Smith, "Cyclical
// Learning Rates", 2015; fastai's lr_find): a few hundred optimizer steps of
// the config's training, on every replica as fit runs them, at a rate that
// rises exponentially from --start to --end; the loss of each step, smoothed
// as fastai smooths it, goes to a CSV, and the rate to use is suggested. The
// weights are thrown away: nothing in the run dir but the CSV changes.
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/run_setup.hpp"
#include "core/error.hpp"
#include "data/dataset.hpp"
#include "data/loader.hpp"
#include "device/devices.hpp"
#include "train/init_from.hpp"
#include "train/loss_scaler.hpp"
#include "train/parallel.hpp"
#include "train/step.hpp"
#include "train/strategy.hpp"

namespace fs = std::filesystem;

namespace gputrain::cli {

namespace {

struct LrFindArgs {
    CommonOptions common;
    double start = 1e-7;
    double end = 10.0;
    int64_t steps = 100;
    double stop_factor = 4.0;
    std::string out;
};

// fastai's smoothing: an exponential average with beta 0.98, debiased.
constexpr double kBeta = 0.98;

struct Curve {
    std::vector<double> rates, losses, smoothed;
};

int run_lr_find(LrFindArgs& a) {
    if (!(a.start > 0) || !(a.end > a.start)) {
        char given[96];
        std::snprintf(given, sizeof given, "--start %g and --end %g", a.start, a.end);
        throw ConfigError(std::string(given) + ": give 0 < start < end, e.g. --start 1e-7 --end 10");
    }
    config::RunConfig cfg = load_config(a.common);
    if (!a.common.run_dir.empty()) cfg.run_dir = a.common.run_dir;
    apply_log_level(cfg, false);
    const std::string out = a.out.empty() ? (fs::path(cfg.run_dir) / "lr_find.csv").string() : a.out;
    const fs::path folder = fs::path(out).parent_path();
    std::error_code ec;
    if (!a.out.empty() && !folder.empty() && !fs::is_directory(folder, ec))
        throw ConfigError("--out " + out + ": the folder '" + folder.string() +
                          "' does not exist; create it or give another path");
    if (!(a.stop_factor > 1.0))
        throw ConfigError("--stop-factor: must be above 1 (a multiple of the lowest smoothed loss), e.g. 4");
    // Only a file lr-find wrote may be replaced: never a checkpoint, a config or a metrics file.
    if (fs::exists(out, ec)) {
        std::ifstream existing(out);
        std::string first;
        std::getline(existing, first);
        if (first != "step,learning_rate,loss,smoothed_loss" || fs::is_directory(out, ec))
            throw ConfigError("--out " + out + ": the file exists and is not an lr-find CSV; give another path");
    }
    const device::Discovery found = device::discover();
    const train::Strategy strategy(cfg, found, {a.common.device, a.common.replicas, nullptr});
    log_cpu_notes(cfg, strategy.on_gpu());
    const data::DataSplits data = data::load_splits(cfg.data, cfg.model.input_shape, data::Need::train);
    if (data.train.size() == 0) throw ConfigError("data: the training set is empty (check data.limit)");
    const int64_t batch = cfg.training.step_batch();
    auto replicas = strategy.make_replicas(cfg, batch);
    check_classes(data.train, replicas[0]->model().classes(), cfg, replicas[0]->model().positions());
    // A fine-tuning's range test starts where its fit starts.
    if (!cfg.model.init_from.empty()) train::init_from_file(cfg, replicas);
    spdlog::info("{}", strategy.describe(batch));

    const int n_replicas = static_cast<int>(replicas.size());
    data::Loader loader(data.train, batch, n_replicas, cfg.training.shuffle, cfg.training.seed, 4, n_replicas,
                        cfg.data.workers);
    loader.set_max_steps(cfg.training.steps_per_epoch);
    bool all_resident = true;
    for (auto& r : replicas) all_resident = r->make_resident(data.train, cfg.data.resident) && all_resident;
    loader.set_index_only(all_resident);
    const int64_t per_epoch = loader.steps_per_epoch();
    std::vector<std::unique_ptr<train::LossScaler>> scalers;
    for (auto& r : replicas)
        scalers.push_back(
            std::make_unique<train::LossScaler>(r->backend(), cfg.training.precision == config::Precision::fp16));

    // Step g of N trains at start * (end / start)^(g / (N - 1)).
    const auto rate_at = [&](int64_t g) {
        const double t = a.steps > 1 ? static_cast<double>(g) / static_cast<double>(a.steps - 1) : 0.0;
        return a.start * std::pow(a.end / a.start, t);
    };
    Curve curve;
    bool stopped = false;
    std::string why;
    double average = 0, best = INFINITY;
    for (int64_t epoch = 0; static_cast<int64_t>(curve.losses.size()) < a.steps && !stopped; ++epoch) {
        const int64_t first = static_cast<int64_t>(curve.losses.size());
        const int64_t steps = std::min(per_epoch, a.steps - first);
        loader.start_epoch(epoch);
        // Every replica sees the same global loss, so all stop after the same step.
        const double average_before = average, best_before = best;  // read by every replica, written after
        train::run_on_replicas(replicas, [&](train::Replica& r) {
            size_t index = 0;
            while (replicas[index].get() != &r) ++index;
            train::Step step(cfg, r, *scalers[index], /*sticky=*/false);
            r.begin_epoch(data.train.size(), cfg.training.shuffle, cfg.training.seed, epoch);
            r.reset_stats();
            double avg = average_before, low = best_before;
            for (int64_t s = 0; s < steps; ++s) {
                auto b = loader.get(s);
                const int64_t begin = b->shard_begin[r.rank()], end = b->shard_begin[r.rank() + 1];
                r.load_training_shard(*b, batch);
                const int64_t g = first + s;
                step.run({epoch, s, g, rate_at(g), begin, static_cast<int>(end - begin), b->size});
                double loss_sum = 0, correct = 0;
                r.read_stats(loss_sum, correct);
                r.reset_stats();
                r.comm().allreduce_sum_host(&loss_sum, 1);
                const double loss = loss_sum / static_cast<double>(b->size);
                avg = kBeta * avg + (1 - kBeta) * loss;
                const double smooth = avg / (1 - std::pow(kBeta, static_cast<double>(g + 1)));
                low = std::min(low, smooth);
                if (index == 0) {
                    curve.rates.push_back(rate_at(g));
                    curve.losses.push_back(loss);
                    curve.smoothed.push_back(smooth);
                }
                const bool diverged = !std::isfinite(loss) || (g >= 5 && smooth > a.stop_factor * low);
                if (diverged) {
                    if (index == 0) {
                        stopped = true;
                        char text[96];
                        std::snprintf(text, sizeof text, "the smoothed loss passed %gx its lowest", a.stop_factor);
                        why = !std::isfinite(loss) ? "the loss became " + std::string(std::isnan(loss) ? "NaN" : "Inf")
                                                   : std::string(text);
                    }
                    break;
                }
            }
            if (index == 0) {
                average = avg;
                best = low;
            }
        });
        if (curve.losses.size() < static_cast<size_t>(first + steps)) break;  // stopped inside the epoch
    }

    // The suggestions: the rate a tenth of the one at the lowest smoothed loss
    // (Smith's rule of thumb, fastai v1's), and where the smoothed loss fell
    // fastest against log(rate) (fastai's "steep").
    size_t lowest = 0, steepest = 0;
    double drop = INFINITY;
    // The first tenth of the steps is left out of "steepest" (fastai skips
    // the start too): the smoothing's first values are noise.
    const size_t settle = std::max<size_t>(1, curve.smoothed.size() / 10);
    for (size_t i = 0; i < curve.smoothed.size(); ++i) {
        if (curve.smoothed[i] < curve.smoothed[lowest]) lowest = i;
        if (i >= settle && i + 1 < curve.smoothed.size()) {
            const double slope = (curve.smoothed[i + 1] - curve.smoothed[i - 1]) /
                                 (std::log(curve.rates[i + 1]) - std::log(curve.rates[i - 1]));
            if (slope < drop) {
                drop = slope;
                steepest = i;
            }
        }
    }
    if (folder.empty() || a.out.empty()) fs::create_directories(folder.empty() ? fs::path(".") : folder, ec);
    {
        const std::string temp = out + ".tmp";
        std::ofstream f(temp);
        if (!f) throw Error("cannot write '" + out + "': " + std::strerror(errno));
        f << "step,learning_rate,loss,smoothed_loss\n";
        for (size_t i = 0; i < curve.losses.size(); ++i) {
            char line[128];
            std::snprintf(line, sizeof line, "%zu,%.6g,%.6g,%.6g\n", i + 1, curve.rates[i], curve.losses[i],
                          curve.smoothed[i]);
            f << line;
        }
        f.close();
        if (!f) throw Error("cannot write '" + out + "'");
        fs::rename(temp, out, ec);
        if (ec) throw Error("cannot write '" + out + "': " + ec.message());
    }
    std::printf("lr-find: %zu steps at rates from %.3g to %.3g%s\n", curve.losses.size(), a.start,
                curve.rates.empty() ? a.start : curve.rates.back(), stopped ? (" (stopped: " + why + ")").c_str() : "");
    const bool at_edge = lowest == 0 || lowest + 1 == curve.smoothed.size();
    if (curve.smoothed.size() < 10) {
        std::printf("too few steps (%zu) to suggest a rate; lower --start, lower --end or raise --steps\n",
                    curve.smoothed.size());
    } else if (at_edge) {
        std::printf("the lowest smoothed loss (%.4g) is at the %s of the range (rate %.3g), so no rate is "
                    "suggested; %s\n",
                    curve.smoothed[lowest], lowest == 0 ? "start" : "end", curve.rates[lowest],
                    lowest == 0 ? "lower --start" : "raise --end (or --steps)");
    } else {
        std::printf("lowest smoothed loss %.4g at learning rate %.3g; steepest fall at %.3g\n",
                    curve.smoothed[lowest], curve.rates[lowest], curve.rates[steepest]);
        std::printf("suggested optimizer.learning_rate: %.3g (a tenth of the lowest's rate; with one_cycle, "
                    "max_lr: %.3g)\n",
                    curve.rates[lowest] / 10, curve.rates[lowest] / 10);
    }
    std::printf("wrote %s (scripts/plot %s draws it)\n", out.c_str(), out.c_str());
    return 0;
}

}  // namespace

Action add_lr_find_command(CLI::App& app) {
    auto args = std::make_shared<LrFindArgs>();
    CLI::App* cmd = app.add_subcommand(
        "lr-find", "Learning-rate range test (fastai's lr_find): train a few hundred steps at a rate rising "
                   "exponentially, write each step's loss to a CSV and suggest a rate; the weights are not kept");
    cmd->add_option("config", args->common.config_path, "YAML config file")->required();
    cmd->add_option("--set", args->common.overrides, "Override a config key, e.g. --set training.batch_size=512 "
                                                     "(repeatable)")
        ->allow_extra_args(false);
    cmd->add_option("--device", args->common.device, "auto, cpu or gpu: decides the replicas, as for fit")
        ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
    cmd->add_option("--replicas", args->common.replicas, "Number of CPU replicas (threads)")->check(replica_count());
    cmd->add_option("--run-dir", args->common.run_dir, "Where lr_find.csv goes (default: the config's run_dir)");
    cmd->add_option("--start", args->start, "The first step's learning rate (default 1e-7)");
    cmd->add_option("--end", args->end, "The last step's learning rate (default 10)");
    cmd->add_option("--steps", args->steps, "Optimizer steps (default 100)")->check(step_count(2));
    cmd->add_option("--stop-factor", args->stop_factor,
                    "Stop when the smoothed loss passes this many times its lowest (default 4)");
    cmd->add_option("--out", args->out, "The CSV to write (default RUN_DIR/lr_find.csv)");
    return [args] { return run_lr_find(*args); };
}

}  // namespace gputrain::cli
