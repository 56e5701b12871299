// Interrupts, divergence and crash leftovers: what the trainer does when a run
// cannot go on as planned.
#include <csignal>
#include <fstream>
#include <unistd.h>

#include "checkpoint/safetensors.hpp"
#include "core/error.hpp"
#include "train/checkpointer.hpp"
#include "train/interrupt.hpp"
#include "train_fixture.hpp"

using namespace gputrain;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const fs::path& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

}  // namespace

TEST_CASE("An interrupt mid-epoch writes a checkpoint that resumes to the uninterrupted result") {
    data::DataSplits data;
    data.train = fixture::blobs(53, 6);  // 7 steps of 8
    for (int n : {1, 3}) {
        INFO(n << " replicas");
        const auto cfg = fixture::small_job(3, 8);
        fixture::TempDir straight, stopped;
        auto a = fixture::replicas(cfg, n);
        const auto reference = fixture::fit(cfg, a, data, straight.path.string());

        // Epoch 1 completes; the signal is seen at the first agreement point of epoch 2.
        auto one = fixture::small_job(1, 8);
        auto b = fixture::replicas(one, n);
        fixture::fit(one, b, data, stopped.path.string());
        train::simulate_interrupt(SIGINT);
        auto c = fixture::replicas(cfg, n);
        try {
            fixture::fit(cfg, c, data, stopped.path.string(), train::latest_checkpoint(stopped.path.string()));
            train::reset_interrupts();
            FAIL("fit returned although interrupted");
        } catch (const train::Interrupted& e) {
            train::reset_interrupts();
            REQUIRE(e.exit_code() == 130);
            const std::string text = e.what();
            REQUIRE(text.find("interrupted by SIGINT at epoch 2, step 1/7; checkpoint written to " +
                              (stopped.path / "last.safetensors").string()) == 0);
            REQUIRE(text.find("--resume") != std::string::npos);
        }
        const auto saved = checkpoint::load((stopped.path / "last.safetensors").string());
        REQUIRE(saved.metadata.at("epoch") == "1");
        REQUIRE(saved.metadata.at("step_in_epoch") == "1");
        REQUIRE(saved.metadata.at("global_step") == "8");
        REQUIRE(saved.metadata.at("interrupted_by") == "SIGINT");

        auto d = fixture::replicas(cfg, n);
        const auto resumed =
            fixture::fit(cfg, d, data, stopped.path.string(), (stopped.path / "last.safetensors").string());
        REQUIRE(resumed.history.size() == 2);
        REQUIRE(fixture::params_of(*d[0]) == fixture::params_of(*a[0]));
        // The resumed epoch reports averages over all of its steps, as the straight run did.
        REQUIRE(resumed.history[0].loss == Approx(reference.history[1].loss).epsilon(1e-6));
        REQUIRE(resumed.history[0].metric == Approx(reference.history[1].metric).epsilon(1e-9));
        const auto csv = lines_of(stopped.path / "metrics.csv");
        REQUIRE(csv.size() == 4);
        REQUIRE(csv[2].rfind("2,", 0) == 0);
    }
}

TEST_CASE("An interrupt that arrives at an epoch's end keeps that epoch and stops before the next") {
    data::DataSplits data;
    data.train = fixture::blobs(16, 6);  // 2 steps: the signal is first seen at the last step
    const auto cfg = fixture::small_job(3, 8);
    fixture::TempDir dir;
    auto reps = fixture::replicas(cfg, 2);
    train::simulate_interrupt(SIGTERM);
    try {
        fixture::fit(cfg, reps, data, dir.path.string());
        train::reset_interrupts();
        FAIL("fit returned although interrupted");
    } catch (const train::Interrupted& e) {
        train::reset_interrupts();
        REQUIRE(e.exit_code() == 143);
        REQUIRE(std::string(e.what()).find("interrupted by SIGTERM at epoch 1, step 1/2") == 0);
    }
    train::reset_interrupts();
}

TEST_CASE("NaN gradients stop training with the epoch, step and last good checkpoint") {
    data::DataSplits clean, poisoned;
    clean.train = fixture::blobs(32, 3);
    poisoned.train = clean.train;
    poisoned.train.inputs[6 * 20 + 2] = std::nanf("");  // sample 20: the third batch of 8 when not shuffled
    auto cfg = fixture::small_job(2, 8);
    cfg.training.shuffle = false;
    fixture::TempDir dir;

    auto a = fixture::replicas(cfg, 2);
    REQUIRE_THROWS_WITH(fixture::fit(cfg, a, poisoned, dir.path.string()),
                        "training diverged: NaN or Inf in the gradients at epoch 1, step 3/4; no checkpoint was "
                        "written yet; lower optimizer.learning_rate, or set training.on_nan: skip_step to skip such "
                        "steps");
    REQUIRE_FALSE(fs::exists(dir.path / "last.safetensors"));

    auto one = cfg;
    one.training.epochs = 1;
    auto b = fixture::replicas(one, 2);
    fixture::fit(one, b, clean, dir.path.string());
    auto c = fixture::replicas(cfg, 2);
    const std::string last = (dir.path / "last.safetensors").string();
    REQUIRE_THROWS_WITH(fixture::fit(cfg, c, poisoned, dir.path.string(), last),
                        Catch::Contains("at epoch 2, step 3/4; the last good checkpoint is " + last));
    REQUIRE(checkpoint::load(last).metadata.at("epoch") == "1");
}

TEST_CASE("NaN gradients found at a later progress report: the right step, and no update after it") {
    // The flag is read only when progress is reported (here once, at the
    // epoch's end); the steps after the bad one are computed but not applied.
    for (int n : {1, 2}) {  // one replica checks the sums itself; two know it from summing
        INFO(n << " replicas");
        fixture::check_late_nan_stop([n](const config::RunConfig& cfg) { return fixture::replicas(cfg, n); },
                                     fixture::params_of);
    }
}

TEST_CASE("on_nan: skip_step skips exactly the poisoned steps") {
    data::DataSplits poisoned, without;
    poisoned.train = fixture::blobs(32, 3);
    poisoned.train.inputs[6 * 20] = std::numeric_limits<float>::infinity();  // batch 3 of 4 (samples 16..23)
    // Plain SGD, no dropout, no shuffle: skipping batch 3 in every epoch is the
    // same as training on a data set without its samples.
    auto cfg = fixture::small_job(2, 8, config::OptimizerType::sgd);
    cfg.training.shuffle = false;
    cfg.training.on_nan = config::OnNan::skip_step;
    cfg.optimizer.momentum = 0.0;
    cfg.model.layers.erase(cfg.model.layers.begin() + 1);
    without.train = poisoned.train;
    without.train.inputs.erase(without.train.inputs.begin() + 6 * 16, without.train.inputs.begin() + 6 * 24);
    without.train.labels.erase(without.train.labels.begin() + 16, without.train.labels.begin() + 24);

    fixture::TempDir dir, dir2;
    auto a = fixture::replicas(cfg, 2);
    REQUIRE(fixture::fit(cfg, a, poisoned, dir.path.string()).epochs_done == 2);
    auto b = fixture::replicas(cfg, 2);
    fixture::fit(cfg, b, without, dir2.path.string());
    REQUIRE(fixture::params_of(*a[0]) == fixture::params_of(*b[0]));
    REQUIRE(checkpoint::load((dir.path / "last.safetensors").string()).metadata.at("global_step") == "8");
}

TEST_CASE("A checkpoint with NaN weights is refused and the previous one kept") {
    data::DataSplits data;
    data.train = fixture::blobs(16, 3);
    const auto cfg = fixture::small_job(1, 8);
    fixture::TempDir dir;
    auto reps = fixture::replicas(cfg, 1);
    fixture::fit(cfg, reps, data, dir.path.string());
    const std::string last = (dir.path / "last.safetensors").string();
    const auto before = checkpoint::load(last);

    reps[0]->model().param_data()[3] = std::nanf("");
    train::Checkpointer checkpointer(cfg, dir.path.string());
    train::TrainingState state;
    state.epochs_done = 2;
    REQUIRE_THROWS_WITH(checkpointer.save_epoch(*reps[0], state, train::EpochRecord{}, {}, false),
                        Catch::StartsWith("not writing '" + (dir.path / "epoch-002.safetensors").string() +
                                          "' after epoch 2: tensor 'dense/kernel' holds NaN (a gradient or its "
                                          "square past float32's range"));
    REQUIRE(checkpoint::load(last).metadata.at("epoch") == before.metadata.at("epoch"));
    for (const auto& entry : fs::directory_iterator(dir.path))
        REQUIRE(entry.path().filename().string().find(".tmp") == std::string::npos);
}

TEST_CASE("Leftovers of a killed run: temporary files go, metrics rows past the checkpoint go") {
    data::DataSplits data;
    data.train = fixture::blobs(16, 3);
    const auto cfg = fixture::small_job(3, 8);
    fixture::TempDir dir;
    auto a = fixture::replicas(cfg, 1);
    fixture::fit(cfg, a, data, dir.path.string());
    // As if killed while writing a checkpoint and while appending a metrics row.
    std::ofstream(dir.path / "last.safetensors.tmp-99999") << "half a checkpoint";
    // Another process writing into the same folder right now (this test's parent is alive).
    const std::string live = "last.safetensors.tmp-" + std::to_string(::getppid());
    std::ofstream(dir.path / live) << "being written";
    std::ofstream(dir.path / "metrics.csv", std::ios::app) << "4,0.1";
    REQUIRE(lines_of(dir.path / "metrics.csv").size() == 5);

    auto b = fixture::replicas(cfg, 1);
    fixture::fit(cfg, b, data, dir.path.string(), (dir.path / "epoch-001.safetensors").string());
    REQUIRE_FALSE(fs::exists(dir.path / "last.safetensors.tmp-99999"));
    REQUIRE(fs::exists(dir.path / live));
    const auto csv = lines_of(dir.path / "metrics.csv");
    REQUIRE(csv.size() == 4);  // header, epoch 1 from the first run, epochs 2 and 3 rewritten
    REQUIRE(csv[1].rfind("1,", 0) == 0);
    REQUIRE(csv[2].rfind("2,", 0) == 0);
    REQUIRE(csv[3].rfind("3,", 0) == 0);
}

TEST_CASE("A checkpoint folder that cannot be created fails before training") {
    data::DataSplits data;
    data.train = fixture::blobs(16, 3);
    const auto cfg = fixture::small_job(1, 8);
    fixture::TempDir dir;
    std::ofstream(dir.path / "file") << "x";
    auto reps = fixture::replicas(cfg, 1);
    REQUIRE_THROWS_WITH(fixture::fit(cfg, reps, data, (dir.path / "file" / "run").string()),
                        Catch::StartsWith("cannot create checkpoint folder '" + (dir.path / "file" / "run").string() +
                                          "': ") &&
                            Catch::EndsWith("; set checkpoint.dir or --run-dir to a writable folder"));
}
