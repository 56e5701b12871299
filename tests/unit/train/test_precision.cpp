// training.precision: fp16's dynamic loss scaling (train/loss_scaler), on the
// CPU backend, which computes in fp32 whatever the precision: scaling by powers
// of two is exact there, so fp16 runs must equal fp32 runs.
#include <cmath>
#include <cstdio>
#include <limits>

#include "backend/cpu/cpu_backend.hpp"
#include "checkpoint/safetensors.hpp"
#include "train/loss_scaler.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

// The scaler on the CPU backend, fed one verdict per step as the trainer's
// finite check writes it (guard[0]).
struct Scaler {
    CpuBackend backend;
    train::LossScaler s{backend, true};
    int32_t guard[Backend::kGuardWords] = {};
    math::LossScaleState step(bool bad, bool sticky = false) {
        guard[0] = bad ? 1 : 0;
        s.update(guard, sticky);
        return s.read();
    }
};

}  // namespace

TEST_CASE("LossScaler: halves on overflow down to 1, then counts divergence; doubles after 2000 good steps") {
    Scaler t;
    REQUIRE(t.s.read().scale == 65536.0f);
    REQUIRE(t.s.read().inverse == 1.0f / 65536.0f);
    math::LossScaleState st = t.step(true);
    REQUIRE((st.scale == 32768.0f && st.inverse == 1.0f / 32768.0f && st.skip == 1 && st.overflows == 1));
    for (int i = 0; i < 1999; ++i) st = t.step(false);
    REQUIRE((st.scale == 32768.0f && st.skip == 0 && st.good_steps == 1999));
    st = t.step(false);
    REQUIRE((st.scale == 65536.0f && st.good_steps == 0));
    // An overflow resets the run of good steps.
    for (int i = 0; i < 1500; ++i) t.step(false);
    t.step(true);
    for (int i = 0; i < 1999; ++i) st = t.step(false);
    REQUIRE(st.scale == 32768.0f);
    int halvings = 0;
    while (t.s.read().scale > 1.0f) {
        st = t.step(true);
        ++halvings;
    }
    REQUIRE(halvings == 15);  // 2^15 -> 2^0
    REQUIRE((st.overflows == 17 && st.divergences == 0 && st.steps == 3500 + 1999 + 16 + 1));
    // At scale 1 an overflow is divergence: counted, with the step of the first.
    st = t.step(true);
    REQUIRE((st.scale == 1.0f && st.skip == 1 && st.overflows == 17 && st.divergences == 1));
    REQUIRE(st.first_divergence == st.steps);  // 1 + the index of that step
    // After it, good steps are applied again, unless sticky (on_nan: stop) holds them back.
    REQUIRE(t.step(false).skip == 0);
    REQUIRE(t.step(false, /*sticky=*/true).skip == 1);
    // An epoch's start zeroes the counts; the scale and its run of good steps carry on.
    t.s.reset_counts();
    st = t.s.read();
    REQUIRE((st.overflows == 0 && st.divergences == 0 && st.first_divergence == 0 && st.steps == 0));
    REQUIRE((st.scale == 1.0f && st.good_steps == 2));
}

TEST_CASE("LossScaler: disabled (fp32/tf32/bf16) holds nothing; restore clamps") {
    CpuBackend backend;
    train::LossScaler off(backend, false);
    REQUIRE_FALSE(off.enabled());
    train::LossScaler on(backend, true);
    on.restore(0.25, -3);
    REQUIRE((on.read().scale == 1.0f && on.read().inverse == 1.0f && on.read().good_steps == 0));
    on.restore(1e30, 17);
    REQUIRE((on.read().scale == 16777216.0f && on.read().good_steps == 17));
    on.restore(4096, 5000);
    REQUIRE((on.read().scale == 4096.0f && on.read().inverse == 1.0f / 4096.0f && on.read().good_steps == 1999));
}

TEST_CASE("precision fp16 on the CPU trains exactly like fp32 (the scale is a power of two)") {
    data::DataSplits data;
    data.train = fixture::blobs(40, 7);
    auto fp32 = fixture::small_job(2, 8);
    auto fp16 = fp32;
    fp16.training.precision = config::Precision::fp16;
    fixture::TempDir d1, d2;
    const int replicas = GENERATE(1, 2);
    auto a = fixture::replicas(fp32, replicas);
    auto b = fixture::replicas(fp16, replicas);
    const auto ra = fixture::fit(fp32, a, data, d1.path.string());
    const auto rb = fixture::fit(fp16, b, data, d2.path.string());
    REQUIRE(fixture::params_of(*a[0]) == fixture::params_of(*b[0]));
    REQUIRE(ra.history.back().loss == rb.history.back().loss);
    REQUIRE(checkpoint::load((d2.path / "last.safetensors").string()).metadata.at("loss_scale") == "65536");
    REQUIRE(checkpoint::load((d1.path / "last.safetensors").string()).metadata.count("loss_scale") == 0);
}

TEST_CASE("precision fp16: an overflowing step is skipped and the scale halved, where fp32 would stop") {
    data::DataSplits poisoned, without;
    poisoned.train = fixture::blobs(32, 3);
    poisoned.train.inputs[6 * 20] = std::numeric_limits<float>::infinity();  // batch 3 of 4 (samples 16..23)
    // As the on_nan: skip_step test: plain SGD, no dropout, no shuffle, so
    // skipping batch 3 equals training without its samples.
    auto cfg = fixture::small_job(2, 8, config::OptimizerType::sgd);
    cfg.training.shuffle = false;
    cfg.optimizer.momentum = 0.0;
    cfg.model.layers.erase(cfg.model.layers.begin() + 1);
    without.train = poisoned.train;
    without.train.inputs.erase(without.train.inputs.begin() + 6 * 16, without.train.inputs.begin() + 6 * 24);
    without.train.labels.erase(without.train.labels.begin() + 16, without.train.labels.begin() + 24);

    fixture::TempDir dir, dir2;
    auto stop = fixture::replicas(cfg, 2);
    REQUIRE_THROWS_WITH(fixture::fit(cfg, stop, poisoned, dir.path.string()),
                        Catch::StartsWith("training diverged: NaN or Inf in the gradients at epoch 1, step 3/4"));

    auto fp16 = cfg;
    fp16.training.precision = config::Precision::fp16;
    auto a = fixture::replicas(fp16, 2);
    std::FILE* out = std::tmpfile();
    train::FitOptions options;
    options.run_dir = dir.path.string();
    options.progress = train::ProgressMode::none;
    options.out = out;
    REQUIRE(train::Trainer(fp16, a, poisoned, options).fit().epochs_done == 2);
    std::rewind(out);
    std::string printed(4096, '\0');
    printed.resize(std::fread(printed.data(), 1, printed.size(), out));
    std::fclose(out);
    REQUIRE_THAT(printed, Catch::Contains("epoch 1: 1 step overflowed in fp16 and was skipped; loss scale now 32768\n"));
    REQUIRE_THAT(printed, Catch::Contains("epoch 2: 1 step overflowed in fp16 and was skipped; loss scale now 16384\n"));
    auto b = fixture::replicas(cfg, 2);
    fixture::fit(cfg, b, without, dir2.path.string());
    REQUIRE(fixture::params_of(*a[0]) == fixture::params_of(*b[0]));
    const auto meta = checkpoint::load((dir.path / "last.safetensors").string()).metadata;
    REQUIRE(meta.at("loss_scale") == "16384");  // halved once per epoch
    REQUIRE(meta.at("global_step") == "8");
}

TEST_CASE("precision fp16: resume continues with the checkpoint's loss scale") {
    data::DataSplits poisoned;
    poisoned.train = fixture::blobs(32, 3);
    poisoned.train.inputs[6 * 20] = std::numeric_limits<float>::infinity();
    auto cfg = fixture::small_job(1, 8, config::OptimizerType::sgd);
    cfg.training.shuffle = false;
    cfg.training.precision = config::Precision::fp16;
    fixture::TempDir dir;
    auto a = fixture::replicas(cfg, 1);
    fixture::fit(cfg, a, poisoned, dir.path.string());
    const std::string last = (dir.path / "last.safetensors").string();
    REQUIRE(checkpoint::load(last).metadata.at("loss_scale") == "32768");
    auto more = cfg;
    more.training.epochs = 3;
    auto b = fixture::replicas(more, 1);
    fixture::fit(more, b, poisoned, dir.path.string(), last);
    REQUIRE(checkpoint::load(last).metadata.at("loss_scale") == "8192");
}

TEST_CASE("precision fp16: an epoch that only overflowed, with a NaN loss, is divergence, not calibration") {
    data::DataSplits data;
    data.train = fixture::blobs(64, 3);  // 8 steps of 8
    auto cfg = fixture::small_job(3, 8, config::OptimizerType::sgd);
    cfg.training.precision = config::Precision::fp16;
    cfg.optimizer.learning_rate = 1e30;  // step 1 applies, then every forward is NaN/Inf
    fixture::TempDir dir;
    auto a = fixture::replicas(cfg, 1);
    REQUIRE_THROWS_WITH(fixture::fit(cfg, a, data, dir.path.string()),
                        Catch::StartsWith("training diverged: NaN or Inf in the gradients at epoch 2, step 1/8;"));
    // With on_nan: skip_step the user asked to go on.
    cfg.training.on_nan = config::OnNan::skip_step;
    fixture::TempDir dir2;
    auto b = fixture::replicas(cfg, 1);
    REQUIRE(fixture::fit(cfg, b, data, dir2.path.string()).epochs_done == 3);
}
