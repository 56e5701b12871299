// early_stopping: Keras' rule, epoch by epoch; the trainer stopping where the
// rule says; a resume that goes on counting.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <tuple>

#include "checkpoint/safetensors.hpp"
#include "core/error.hpp"
#include "train/early_stopping.hpp"
#include "train_fixture.hpp"

using namespace gputrain;
namespace fs = std::filesystem;

namespace {

config::EarlyStoppingConfig watching(config::Monitor monitor, int64_t patience) {
    config::EarlyStoppingConfig c;
    c.enabled = true;
    c.monitor = monitor;
    c.patience = patience;
    return c;
}

// The epoch (1-based) after which `rule` stops on these val_loss values, or 0 when it never does.
int64_t stop_epoch(const train::EarlyStopping& rule, const std::vector<double>& values,
                   train::EarlyStoppingState* end_state = nullptr) {
    train::EarlyStoppingState state;
    for (size_t i = 0; i < values.size(); ++i) {
        train::EpochRecord rec;
        rec.epoch = static_cast<int64_t>(i) + 1;
        rec.has_validation = true;
        rec.val_loss = rec.val_metric = rec.loss = rec.metric = values[i];
        if (rule.after_epoch(state, rec)) {
            if (end_state) *end_state = state;
            return rec.epoch;
        }
    }
    if (end_state) *end_state = state;
    return 0;
}

}  // namespace

TEST_CASE("early stopping follows Keras' rule: patience, min_delta, mode, start_from_epoch") {
    // val_loss per epoch: best at 2 (0.8), then 4 (0.79, by 0.01), then 7.
    const std::vector<double> losses{1.0, 0.8, 0.85, 0.79, 0.9, 0.95, 0.7};
    auto cfg = watching(config::Monitor::val_loss, 2);
    CHECK(stop_epoch(train::EarlyStopping(cfg, true), losses) == 6);
    cfg.patience = 0;  // the first epoch without improvement
    CHECK(stop_epoch(train::EarlyStopping(cfg, true), losses) == 3);
    cfg.patience = 4;
    CHECK(stop_epoch(train::EarlyStopping(cfg, true), losses) == 0);
    // Epoch 4's 0.79 beats 0.8 by 0.01, not by more than 0.02: 3 and 4 do not improve.
    cfg.patience = 2;
    cfg.min_delta = 0.02;
    train::EarlyStoppingState end;
    const train::EarlyStopping strict(cfg, true);
    CHECK(stop_epoch(strict, losses, &end) == 4);
    CHECK(end.best_epoch == 2);
    CHECK(end.wait == 2);
    CHECK(end.of == "val_loss min");
    CHECK(strict.reason(end) ==
          "val_loss did not improve on 0.8 (epoch 2) by more than 0.02 for 2 epochs (early_stopping.patience: 2)");
    // Epochs 1 to 3 not watched: 4 is the first best.
    cfg.min_delta = 0;
    cfg.start_from_epoch = 3;
    CHECK(stop_epoch(train::EarlyStopping(cfg, true), losses) == 6);
    cfg.patience = 1;
    CHECK(stop_epoch(train::EarlyStopping(cfg, true), losses) == 5);
    // Higher is better for accuracy (mode auto), or for anything under mode max.
    const std::vector<double> accuracies{0.5, 0.6, 0.6, 0.59};
    auto acc = watching(config::Monitor::val_accuracy, 1);
    CHECK(stop_epoch(train::EarlyStopping(acc, true), accuracies) == 3);
    acc.mode = config::MonitorMode::min;
    CHECK(stop_epoch(train::EarlyStopping(acc, true), accuracies) == 2);
    auto max_loss = watching(config::Monitor::val_loss, 0);
    max_loss.mode = config::MonitorMode::max;
    CHECK(stop_epoch(train::EarlyStopping(max_loss, true), losses) == 2);
}

TEST_CASE("early stopping: NaN is never a best, the first epoch never stops, val_* falls back without validation") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const train::EarlyStopping rule(watching(config::Monitor::val_loss, 0), true);
    CHECK(stop_epoch(rule, {nan, 1.0, 1.1}) == 3);  // epoch 1's NaN counts, but epoch 1 never stops
    train::EarlyStoppingState end;
    CHECK(stop_epoch(rule, {1.0, nan}, &end) == 2);
    CHECK(rule.reason(end) == "val_loss did not improve on 1 (epoch 1) for 1 epoch (early_stopping.patience: 0)");
    CHECK(stop_epoch(train::EarlyStopping(watching(config::Monitor::val_loss, 1), true), {nan, nan}, &end) == 2);
    CHECK(!end.has_best);
    CHECK(train::EarlyStopping(watching(config::Monitor::val_loss, 1), true).reason(end) ==
          "val_loss was NaN for 2 epochs (early_stopping.patience: 1)");
    // Without validation data val_loss watches the training loss.
    const train::EarlyStopping no_validation(watching(config::Monitor::val_loss, 0), false);
    CHECK(no_validation.metric().describe() == "loss min");
    train::EarlyStoppingState state;
    train::EpochRecord rec;
    rec.epoch = 1, rec.loss = 0.5, rec.val_loss = 9;
    CHECK(!no_validation.after_epoch(state, rec));
    rec.epoch = 2, rec.loss = 0.6, rec.val_loss = 1;
    CHECK(no_validation.after_epoch(state, rec));
    CHECK(state.best == 0.5);
    // Off: nothing is watched.
    config::EarlyStoppingConfig off;
    CHECK(stop_epoch(train::EarlyStopping(off, true), {1, 2, 3}, &end) == 0);
    CHECK(end.of.empty());
}

TEST_CASE("early stopping: a restored state stops at once when patience is spent; another metric starts over") {
    train::EarlyStoppingState restored;
    restored.of = "val_loss min", restored.has_best = true, restored.best = 0.3, restored.best_epoch = 4,
    restored.wait = 2;
    CHECK(train::EarlyStopping(watching(config::Monitor::val_loss, 2), true).stops(restored, 6));
    CHECK(!train::EarlyStopping(watching(config::Monitor::val_loss, 3), true).stops(restored, 6));
    config::EarlyStoppingConfig off = watching(config::Monitor::val_loss, 0);
    off.enabled = false;
    CHECK(!train::EarlyStopping(off, true).stops(restored, 6));
    train::EarlyStoppingState kept = restored;
    CHECK(train::EarlyStopping(watching(config::Monitor::val_loss, 2), true).adopt(kept).empty());
    CHECK(kept.wait == 2);
    CHECK(train::EarlyStopping(watching(config::Monitor::val_accuracy, 2), true).adopt(kept) ==
          "early stopping watched val_loss min, now val_accuracy max: its count of epochs without improvement starts "
          "over");
    CHECK(kept.of.empty());
    CHECK(kept.wait == 0);
    CHECK(!kept.has_best);
}

namespace {

// A job that overfits its 24 training samples at a high learning rate, so
// that the validation loss turns up within a few epochs.
struct OverfitJob {
    data::DataSplits data;
    config::RunConfig cfg = fixture::small_job(60, 8);
    OverfitJob() {
        data.train = fixture::blobs(24, 11);
        data.validation = fixture::blobs(40, 12);
        cfg.optimizer.learning_rate = 0.05;
        cfg.early_stopping = watching(config::Monitor::val_loss, 1);
        cfg.checkpoint.monitor = config::Monitor::val_loss;
        cfg.checkpoint.every_epochs = 0;
    }
};

// Keras' rule written out again over a history of val_loss values: the first
// epoch after the first at which `patience` epochs in a row have not beaten the best.
int64_t keras_stop(const std::vector<train::EpochRecord>& history, int64_t patience) {
    double best = std::numeric_limits<double>::infinity();
    int64_t wait = 0;
    for (const auto& rec : history) {
        ++wait;
        if (rec.val_loss < best) {
            best = rec.val_loss;
            wait = 0;
        } else if (wait >= patience && rec.epoch > 1) {
            return rec.epoch;
        }
    }
    return 0;
}

}  // namespace

TEST_CASE("fit stops where Keras' rule says and writes that epoch's files; a resume trains nothing more") {
    OverfitJob job;
    job.cfg.checkpoint.every_epochs = 100;  // only the last epoch's epoch-NNN
    fixture::TempDir dir;
    auto reps = fixture::replicas(job.cfg, 2);
    const train::FitResult result = fixture::fit(job.cfg, reps, job.data, dir.path.string());
    const auto stopped = static_cast<int64_t>(result.history.size());
    REQUIRE(stopped < 60);
    CHECK(keras_stop(result.history, 1) == stopped);
    CHECK(result.epochs_done == stopped);
    CHECK(result.stopped_early.rfind("val_loss did not improve on ", 0) == 0);
    char name[32];
    std::snprintf(name, sizeof name, "epoch-%03lld.safetensors", (long long)stopped);
    const auto last = checkpoint::load((dir.path / name).string());
    CHECK(last.metadata.at("early_stopping_of") == "val_loss min");
    CHECK(last.metadata.at("early_stopping_wait") == "1");
    CHECK(std::stoll(last.metadata.at("early_stopping_best_epoch")) == stopped - 1);
    CHECK(last.metadata.at("early_stopping_best") == last.metadata.at("best_value"));

    const auto bytes_before = fs::file_size(dir.path / "last.safetensors");
    const auto time_before = fs::last_write_time(dir.path / "last.safetensors");
    auto again = fixture::replicas(job.cfg, 2);
    const train::FitResult resumed =
        fixture::fit(job.cfg, again, job.data, dir.path.string(), (dir.path / "last.safetensors").string());
    CHECK(resumed.history.empty());
    CHECK(resumed.epochs_done == stopped);
    CHECK(resumed.stopped_early == result.stopped_early);
    CHECK(fs::file_size(dir.path / "last.safetensors") == bytes_before);
    CHECK(fs::last_write_time(dir.path / "last.safetensors") == time_before);
}

TEST_CASE("a resume with more patience trains on to where an uninterrupted run with it stops, bit for bit") {
    OverfitJob job;
    job.cfg.early_stopping.patience = 3;
    fixture::TempDir straight_dir, resumed_dir;
    auto straight = fixture::replicas(job.cfg, 1);
    const auto whole = fixture::fit(job.cfg, straight, job.data, straight_dir.path.string());
    REQUIRE(static_cast<int64_t>(whole.history.size()) < 60);
    CHECK(keras_stop(whole.history, 3) == static_cast<int64_t>(whole.history.size()));

    auto impatient = job.cfg;
    impatient.early_stopping.patience = 0;
    auto first = fixture::replicas(impatient, 1);
    const auto early = fixture::fit(impatient, first, job.data, resumed_dir.path.string());
    REQUIRE(early.history.size() < whole.history.size());
    auto second = fixture::replicas(job.cfg, 1);
    const auto rest = fixture::fit(job.cfg, second, job.data, resumed_dir.path.string(),
                                   (resumed_dir.path / "last.safetensors").string());
    CHECK(rest.epochs_done == whole.epochs_done);
    CHECK(rest.stopped_early == whole.stopped_early);
    CHECK(fixture::params_of(*second[0]) == fixture::params_of(*straight[0]));
}

TEST_CASE("early stopping metadata that cannot be is a damaged checkpoint") {
    OverfitJob job;
    job.cfg.training.epochs = 3;
    fixture::TempDir dir;
    auto reps = fixture::replicas(job.cfg, 1);
    fixture::fit(job.cfg, reps, job.data, dir.path.string());
    const auto good = checkpoint::load((dir.path / "last.safetensors").string());
    REQUIRE(good.metadata.at("epoch") == "3");
    REQUIRE(good.metadata.at("early_stopping_min_delta") == "0");
    REQUIRE(good.metadata.at("early_stopping_start_from_epoch") == "0");
    const std::string damaged = (dir.path / "damaged.safetensors").string();
    const std::string tail = "; the file is damaged: resume from another checkpoint";
    // Each case: metadata set (or, with "", removed), and the error.
    const std::vector<std::tuple<std::map<std::string, std::string>, std::string>> cases{
        {{{"early_stopping_best_epoch", "4"}}, "'early_stopping_best_epoch' (4) is not an epoch done (epoch 3)"},
        {{{"early_stopping_best_epoch", "0"}}, "'early_stopping_best_epoch' (0) is not an epoch done (epoch 3)"},
        {{{"early_stopping_best_epoch", "2"}, {"early_stopping_wait", "2"}},
         "'early_stopping_wait' (2) counts more epochs than followed the best one (2) (epoch 3)"},
        {{{"early_stopping_best", ""}, {"early_stopping_best_epoch", ""}, {"early_stopping_wait", "4"}},
         "'early_stopping_wait' (4) counts more epochs than were done (epoch 3)"},
        {{{"early_stopping_best", ""}},
         "'early_stopping_best' and 'early_stopping_best_epoch' come only together, not one alone"},
        {{{"early_stopping_of", "val_loss min\n\x1b[31m"}},
         "'early_stopping_of' is not a monitored metric and direction such as 'val_loss min'"},
        {{{"early_stopping_min_delta", ""}}, "'early_stopping_of' comes without 'early_stopping_min_delta'"},
    };
    for (const auto& [changes, problem] : cases) {
        INFO(problem);
        auto contents = good;
        for (const auto& [key, value] : changes) {
            if (value.empty()) contents.metadata.erase(key);
            else contents.metadata[key] = value;
        }
        fixture::save_contents(contents, damaged);
        auto again = fixture::replicas(job.cfg, 1);
        CHECK_THROWS_WITH(fixture::fit(job.cfg, again, job.data, dir.path.string(), damaged),
                          damaged + ": metadata " + problem + tail);
    }
    auto contents = good;
    contents.metadata["early_stopping_wait"] = "-1";
    fixture::save_contents(contents, damaged);
    auto again = fixture::replicas(job.cfg, 1);
    CHECK_THROWS_WITH(fixture::fit(job.cfg, again, job.data, dir.path.string(), damaged),
                      damaged + ": metadata 'early_stopping_wait' is not a whole number >= 0: '-1'; the file is "
                                "damaged or not a gputrain checkpoint");
}

TEST_CASE("a resume whose min_delta or start_from_epoch differs starts the count over") {
    train::EarlyStoppingState restored;
    restored.of = "val_loss min", restored.has_best = true, restored.best = 0.3, restored.best_epoch = 4,
    restored.wait = 2;
    auto cfg = watching(config::Monitor::val_loss, 2);
    train::EarlyStoppingState kept = restored;
    cfg.min_delta = 0.5;
    CHECK(train::EarlyStopping(cfg, true).adopt(kept) ==
          "early stopping counted with min_delta 0, now 0.5: its count of epochs without improvement starts over");
    CHECK(kept.wait == 0);
    kept = restored;
    cfg.min_delta = 0;
    cfg.start_from_epoch = 9;
    CHECK(train::EarlyStopping(cfg, true).adopt(kept) ==
          "early stopping counted from epoch 1, now from epoch 10 (start_from_epoch): its count of epochs without "
          "improvement starts over");
    CHECK(!kept.has_best);
    CHECK(train::EarlyStopping::valid_of("val_accuracy max"));
    CHECK(!train::EarlyStopping::valid_of("val_accuracy"));
    CHECK(!train::EarlyStopping::valid_of("loss  min"));
}
