// reduce_lr_on_plateau: Keras' ReduceLROnPlateau rule epoch by epoch (patience,
// factor, cooldown, min_lr, min_delta); the trainer's rates following it; a
// resume in the middle trains what a straight run does, bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "checkpoint/safetensors.hpp"
#include "train/reduce_lr_on_plateau.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

config::ReduceLrOnPlateauConfig plateau_of(int64_t patience, double factor) {
    config::ReduceLrOnPlateauConfig c;
    c.enabled = true;
    c.patience = patience;
    c.factor = factor;
    c.min_delta = 0;
    return c;
}

// The rate after each epoch, for these val_loss values, from a base of 0.1.
std::vector<double> rates(const config::ReduceLrOnPlateauConfig& cfg, const std::vector<double>& values) {
    const train::ReduceLrOnPlateau rule(cfg, true, 0.1);
    train::PlateauState state;
    std::vector<double> out;
    for (size_t i = 0; i < values.size(); ++i) {
        train::EpochRecord rec;
        rec.epoch = static_cast<int64_t>(i) + 1;
        rec.has_validation = true;
        rec.val_loss = rec.loss = rec.val_metric = rec.metric = values[i];
        rule.after_epoch(state, rec);
        out.push_back(rule.learning_rate(state));
    }
    return out;
}

}  // namespace

TEST_CASE("reduce_lr_on_plateau follows Keras' rule: patience, factor, cooldown, min_lr, min_delta") {
    // Best at 2 (0.9) and 6 (0.8); plateaus after each.
    const std::vector<double> v{1.0, 0.9, 0.95, 0.96, 0.97, 0.8, 0.85, 0.86, 0.87, 0.88};
    auto cfg = plateau_of(2, 0.5);
    CHECK(rates(cfg, v) == std::vector<double>{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.0125});
    // A cooldown of 2 after each cut: epochs 5 and 9 count nothing; epoch 10 is the first of a new count.
    cfg.cooldown = 2;
    CHECK(rates(cfg, v) == std::vector<double>{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025});
    // Not below min_lr, and nothing more once there.
    cfg.cooldown = 0;
    cfg.min_lr = 0.03;
    CHECK(rates(cfg, v) == std::vector<double>{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.03, 0.03, 0.03});
    // min_delta 0.15: epoch 2 does not improve on 1.0 enough, epoch 6 does.
    cfg.min_lr = 0;
    cfg.min_delta = 0.15;
    CHECK(rates(cfg, v) == std::vector<double>{0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.00625});
    // patience 0: every epoch that does not improve.
    CHECK(rates(plateau_of(0, 0.5), {1.0, 1.1, 0.5, 0.6}) == std::vector<double>{0.1, 0.05, 0.05, 0.025});
    // mode max (auto for accuracy).
    auto acc = plateau_of(1, 0.5);
    acc.monitor = config::Monitor::val_accuracy;
    CHECK(rates(acc, {0.5, 0.6, 0.55}) == std::vector<double>{0.1, 0.1, 0.05});
    // A gain of exactly min_delta is no improvement, in Keras' rounding
    // (13/60 > 10/60 + 0.05 is false in doubles; 13/60 - 0.05 > 10/60 is true).
    acc.min_delta = 0.05;
    acc.patience = 3;
    CHECK(rates(acc, {10.0 / 60, 11.0 / 60, 11.0 / 60, 13.0 / 60, 12.0 / 60}) ==
          std::vector<double>{0.1, 0.1, 0.1, 0.05, 0.05});
}

TEST_CASE("reduce_lr_on_plateau: NaN never improves; the message; a restored state of another metric or off") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK(rates(plateau_of(1, 0.5), {nan, 1.0, nan}) == std::vector<double>{0.05, 0.05, 0.025});
    const train::ReduceLrOnPlateau rule(plateau_of(2, 0.1), true, 0.001);
    train::PlateauState state;
    std::string said;
    for (double value : {0.5, 0.4, 0.45, 0.41}) {
        train::EpochRecord rec;
        rec.epoch = state.best_epoch + state.wait + 1;
        rec.has_validation = true;
        rec.val_loss = value;
        said = rule.after_epoch(state, rec);
    }
    CHECK(said == "val_loss did not improve on 0.4 (epoch 2) for 2 epochs (reduce_lr_on_plateau.patience: 2); "
                  "learning rate 0.001 -> 0.0001");
    CHECK(state.learning_rate == Approx(1e-4).epsilon(1e-15));
    // Another metric: the count starts over, the rate stays.
    auto by_accuracy = plateau_of(2, 0.1);
    by_accuracy.monitor = config::Monitor::val_accuracy;
    train::PlateauState restored = state;
    CHECK(train::ReduceLrOnPlateau(by_accuracy, true, 0.001).adopt(restored) ==
          "reduce_lr_on_plateau watched val_loss min, now val_accuracy max: its count of epochs without improvement "
          "starts over (the learning rate stays 0.0001)");
    CHECK(restored.learning_rate == state.learning_rate);
    CHECK(!restored.has_best);
    // Off: the configured rate again.
    restored = state;
    config::ReduceLrOnPlateauConfig off;
    const train::ReduceLrOnPlateau none(off, true, 0.001);
    CHECK(none.adopt(restored) == "reduce_lr_on_plateau is off: the learning rate is optimizer.learning_rate (0.001) "
                                  "again");
    CHECK(none.learning_rate(restored) == 0.001);
}

namespace {

struct PlateauJob {
    data::DataSplits data;
    config::RunConfig cfg = fixture::small_job(14, 8);
    PlateauJob() {
        data.train = fixture::blobs(24, 11);
        data.validation = fixture::blobs(40, 12);
        cfg.optimizer.learning_rate = 0.05;
        cfg.reduce_lr_on_plateau = plateau_of(1, 0.5);
        cfg.reduce_lr_on_plateau.cooldown = 1;
        cfg.checkpoint.every_epochs = 1;
    }
};

}  // namespace

TEST_CASE("fit lowers the rate where the rule says, and a resume in the middle trains what a straight run does") {
    PlateauJob job;
    fixture::TempDir straight_dir, resumed_dir;
    auto straight = fixture::replicas(job.cfg, 2);
    const auto whole = fixture::fit(job.cfg, straight, job.data, straight_dir.path.string());
    REQUIRE(whole.history.size() == 14);
    // Keras' rule written out again over the val_loss history: the rate each epoch trained with.
    double best = std::numeric_limits<double>::infinity(), rate = 0.05;
    int64_t wait = 0, cooldown = 0, cuts = 0;
    for (const auto& rec : whole.history) {
        CHECK(rec.learning_rate == rate);
        if (cooldown > 0) --cooldown, wait = 0;
        if (rec.val_loss < best) {  // min_delta 0
            best = rec.val_loss, wait = 0;
        } else if (cooldown == 0 && ++wait >= 1) {
            rate *= 0.5, cooldown = 1, wait = 0, ++cuts;
        }
    }
    REQUIRE(cuts >= 2);  // the job has plateaus to cut at

    auto first = fixture::replicas(job.cfg, 2);
    auto half = job.cfg;
    half.training.epochs = 7;
    fixture::fit(half, first, job.data, resumed_dir.path.string());
    const auto mid = checkpoint::load((resumed_dir.path / "last.safetensors").string());
    CHECK(mid.metadata.at("reduce_lr_of") == "val_loss min");
    auto second = fixture::replicas(job.cfg, 2);
    const auto rest = fixture::fit(job.cfg, second, job.data, resumed_dir.path.string(),
                                   (resumed_dir.path / "last.safetensors").string());
    REQUIRE(rest.history.size() == 7);
    for (size_t i = 0; i < 7; ++i) CHECK(rest.history[i].learning_rate == whole.history[7 + i].learning_rate);
    CHECK(fixture::params_of(*second[0]) == fixture::params_of(*straight[0]));
}

TEST_CASE("reduce_lr metadata that cannot be is a damaged checkpoint") {
    PlateauJob job;
    job.cfg.training.epochs = 3;
    fixture::TempDir dir;
    auto reps = fixture::replicas(job.cfg, 1);
    fixture::fit(job.cfg, reps, job.data, dir.path.string());
    const auto good = checkpoint::load((dir.path / "last.safetensors").string());
    const std::string damaged = (dir.path / "damaged.safetensors").string();
    const std::vector<std::pair<std::pair<std::string, std::string>, std::string>> cases{
        {{"reduce_lr_learning_rate", "0"}, "'reduce_lr_learning_rate' (0) is not a rate above 0"},
        {{"reduce_lr_of", "lr min"}, "'reduce_lr_of' is not a monitored metric and direction such as 'val_loss min'"},
        {{"reduce_lr_best_epoch", "9"}, "'reduce_lr_best_epoch' (9) is not an epoch done (epoch 3)"},
        {{"reduce_lr_wait", "3"}, "'reduce_lr_wait' (3) counts more epochs than followed the best one (" +
                                      good.metadata.at("reduce_lr_best_epoch") + ") (epoch 3)"},
    };
    for (const auto& [change, problem] : cases) {
        INFO(problem);
        auto contents = good;
        contents.metadata[change.first] = change.second;
        fixture::save_contents(contents, damaged);
        auto again = fixture::replicas(job.cfg, 1);
        CHECK_THROWS_WITH(fixture::fit(job.cfg, again, job.data, dir.path.string(), damaged),
                          damaged + ": metadata " + problem + "; the file is damaged: resume from another checkpoint");
    }
    // The other keys without the one that names the metric: damage, not a count to drop silently.
    auto orphans = good;
    orphans.metadata.erase("reduce_lr_of");
    fixture::save_contents(orphans, damaged);
    auto again = fixture::replicas(job.cfg, 1);
    CHECK_THROWS_WITH(fixture::fit(job.cfg, again, job.data, dir.path.string(), damaged),
                      damaged + ": metadata 'reduce_lr_best' comes without 'reduce_lr_of'; the file is damaged: "
                                "resume from another checkpoint");
}
