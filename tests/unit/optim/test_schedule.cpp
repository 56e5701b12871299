#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "optim/schedule.hpp"

using gputrain::config::OptimizerConfig;
using gputrain::config::ScheduleType;
using gputrain::optim::continued_at;
using gputrain::optim::EpochStepsHistory;
using gputrain::optim::format_epoch_steps;
using gputrain::optim::parse_epoch_steps;
using gputrain::optim::Schedule;
using gputrain::optim::steps_before_epoch;

namespace {

OptimizerConfig with_schedule(ScheduleType type, double lr) {
    OptimizerConfig cfg;
    cfg.learning_rate = lr;
    cfg.schedule.type = type;
    return cfg;
}

}  // namespace

TEST_CASE("constant schedule returns the base rate at every step") {
    const Schedule s(with_schedule(ScheduleType::constant, 0.003), 100, 5);
    for (int64_t step : {0, 1, 99, 100, 499, 500, 10000}) REQUIRE(s.learning_rate(step) == Approx(0.003));
}

TEST_CASE("step_decay multiplies by decay_rate every decay_epochs whole epochs") {
    auto cfg = with_schedule(ScheduleType::step_decay, 0.1);
    cfg.schedule.decay_rate = 0.5;
    cfg.schedule.decay_epochs = 2;
    const Schedule s(cfg, 10, 8);  // 10 steps per epoch
    // epochs 0-1: 0.1; epochs 2-3: 0.05; epochs 4-5: 0.025; epochs 6-7: 0.0125
    REQUIRE(s.learning_rate(0) == Approx(0.1));
    REQUIRE(s.learning_rate(19) == Approx(0.1));
    REQUIRE(s.learning_rate(20) == Approx(0.05));
    REQUIRE(s.learning_rate(39) == Approx(0.05));
    REQUIRE(s.learning_rate(40) == Approx(0.025));
    REQUIRE(s.learning_rate(79) == Approx(0.0125));
}

TEST_CASE("exponential_decay: lr * rate^(step / decay_steps), floored with staircase") {
    auto cfg = with_schedule(ScheduleType::exponential_decay, 0.2);
    cfg.schedule.decay_rate = 0.5;
    cfg.schedule.decay_steps = 100;
    SECTION("smooth") {
        const Schedule s(cfg, 50, 10);
        REQUIRE(s.learning_rate(0) == Approx(0.2));
        REQUIRE(s.learning_rate(50) == Approx(0.2 / std::sqrt(2.0)));  // half a decay period
        REQUIRE(s.learning_rate(100) == Approx(0.1));
        REQUIRE(s.learning_rate(150) == Approx(0.1 / std::sqrt(2.0)));
        REQUIRE(s.learning_rate(300) == Approx(0.025));
        REQUIRE(s.learning_rate(1) < s.learning_rate(0));
    }
    SECTION("staircase") {
        cfg.schedule.staircase = true;
        const Schedule s(cfg, 50, 10);
        REQUIRE(s.learning_rate(0) == Approx(0.2));
        REQUIRE(s.learning_rate(50) == Approx(0.2));
        REQUIRE(s.learning_rate(99) == Approx(0.2));
        REQUIRE(s.learning_rate(100) == Approx(0.1));
        REQUIRE(s.learning_rate(199) == Approx(0.1));
        REQUIRE(s.learning_rate(250) == Approx(0.05));
    }
}

TEST_CASE("cosine decays from the base rate to min_lr over training") {
    auto cfg = with_schedule(ScheduleType::cosine, 0.1);
    const double min_lr = GENERATE(0.0, 0.01);
    cfg.schedule.min_lr = min_lr;
    const Schedule s(cfg, 25, 4);  // 100 steps in all
    REQUIRE(s.learning_rate(0) == Approx(0.1));
    // A quarter of the way: min + (base - min)(1 + cos(pi/4))/2.
    REQUIRE(s.learning_rate(25) == Approx(min_lr + (0.1 - min_lr) * (1 + std::sqrt(0.5)) / 2));
    REQUIRE(s.learning_rate(50) == Approx((0.1 + min_lr) / 2));  // the middle
    REQUIRE(s.learning_rate(99) > min_lr);
    REQUIRE(s.learning_rate(99) == Approx(min_lr + (0.1 - min_lr) * (1 + std::cos(M_PI * 0.99)) / 2));
    REQUIRE(s.learning_rate(100) == Approx(min_lr).margin(1e-12));  // the end
    REQUIRE(s.learning_rate(1000) == Approx(min_lr).margin(1e-12));  // stays there
    for (int64_t t = 1; t <= 100; ++t) REQUIRE(s.learning_rate(t) <= s.learning_rate(t - 1));
}

TEST_CASE("warmup ramps linearly over whole epochs, then the schedule takes over") {
    SECTION("constant after warmup") {
        auto cfg = with_schedule(ScheduleType::constant, 0.08);
        cfg.schedule.warmup_epochs = 2;
        const Schedule s(cfg, 4, 10);  // warmup is 8 steps
        // step t of warmup gets base * (t + 1) / 8: the first update is not wasted at zero.
        for (int t = 0; t < 8; ++t) {
            INFO("step " << t);
            REQUIRE(s.learning_rate(t) == Approx(0.08 * (t + 1) / 8));
        }
        REQUIRE(s.learning_rate(8) == Approx(0.08));
        REQUIRE(s.learning_rate(39) == Approx(0.08));
    }
    SECTION("cosine after warmup spans the remaining steps") {
        auto cfg = with_schedule(ScheduleType::cosine, 0.1);
        cfg.schedule.warmup_epochs = 1;
        cfg.schedule.min_lr = 0.0;
        const Schedule s(cfg, 10, 5);  // 50 steps: 10 of warmup, 40 of cosine
        REQUIRE(s.learning_rate(0) == Approx(0.01));
        REQUIRE(s.learning_rate(4) == Approx(0.05));
        REQUIRE(s.learning_rate(9) == Approx(0.1));
        REQUIRE(s.learning_rate(10) == Approx(0.1));
        REQUIRE(s.learning_rate(30) == Approx(0.05));  // halfway through the cosine part
        REQUIRE(s.learning_rate(50) == Approx(0.0).margin(1e-12));
    }
    SECTION("exponential decay counts its steps from the end of warmup") {
        auto cfg = with_schedule(ScheduleType::exponential_decay, 0.1);
        cfg.schedule.warmup_epochs = 1;
        cfg.schedule.decay_rate = 0.5;
        cfg.schedule.decay_steps = 10;
        const Schedule s(cfg, 5, 10);  // warmup is 5 steps
        REQUIRE(s.learning_rate(4) == Approx(0.1));
        REQUIRE(s.learning_rate(5) == Approx(0.1));
        REQUIRE(s.learning_rate(15) == Approx(0.05));
    }
}

TEST_CASE("warmup_steps ramps over optimizer steps, across an epoch boundary, then the schedule takes over") {
    SECTION("constant: 6 steps of warmup in epochs of 4") {
        auto cfg = with_schedule(ScheduleType::constant, 0.06);
        cfg.schedule.warmup_steps = 6;
        const Schedule s(cfg, 4, 10);
        for (int t = 0; t < 6; ++t) {
            INFO("step " << t);
            REQUIRE(s.learning_rate(t) == Approx(0.06 * (t + 1) / 6));
        }
        REQUIRE(s.learning_rate(6) == Approx(0.06));
        REQUIRE(s.learning_rate(39) == Approx(0.06));
    }
    SECTION("cosine spans the steps after warmup; exponential decay counts from its end") {
        auto cfg = with_schedule(ScheduleType::cosine, 0.1);
        cfg.schedule.warmup_steps = 10;
        const Schedule s(cfg, 7, 50 / 7 + 1);  // 8 epochs of 7 = 56 steps: 10 of warmup, 46 of cosine
        REQUIRE(s.learning_rate(9) == Approx(0.1));
        REQUIRE(s.learning_rate(10) == Approx(0.1));
        REQUIRE(s.learning_rate(33) == Approx(0.05));
        auto e = with_schedule(ScheduleType::exponential_decay, 0.1);
        e.schedule.warmup_steps = 3;
        e.schedule.decay_rate = 0.5;
        e.schedule.decay_steps = 4;
        const Schedule x(e, 5, 10);
        REQUIRE(x.learning_rate(2) == Approx(0.1));
        REQUIRE(x.learning_rate(7) == Approx(0.05));
    }
}

TEST_CASE("epoch-based schedules follow the epoch, not the step count, when steps per epoch change (a resume "
          "with another batch size)") {
    SECTION("step_decay: 1 epoch of 13 steps at batch 16, then 4 steps an epoch at batch 64") {
        auto cfg = with_schedule(ScheduleType::step_decay, 0.01);
        cfg.schedule.decay_rate = 0.5;
        cfg.schedule.decay_epochs = 1;
        const Schedule resumed(cfg, 4, 3);
        // Global step 13 is the first step of epoch 1: one decay, not three (13 / 4).
        CHECK(resumed.learning_rate(13, 1, 0) == Approx(0.005));
        CHECK(resumed.learning_rate(17, 2, 0) == Approx(0.0025));
        CHECK(resumed.learning_rate(13) == Approx(0.00125));  // what counting steps alone gave
    }
    SECTION("warmup and cosine: the position within the epoch, at this run's steps per epoch") {
        auto cfg = with_schedule(ScheduleType::cosine, 0.1);
        cfg.schedule.warmup_epochs = 1;
        const Schedule s(cfg, 10, 5);
        CHECK(s.learning_rate(40, 0, 4) == Approx(0.05));  // warmup whatever the global count
        CHECK(s.learning_rate(3, 3, 0) == Approx(0.05));   // halfway through the cosine part
    }
}

TEST_CASE("exponential_decay after warmup counts from the step where warmup ended, whatever batch each epoch "
          "had") {
    auto cfg = with_schedule(ScheduleType::exponential_decay, 0.1);
    cfg.schedule.warmup_epochs = 2;
    cfg.schedule.decay_rate = 0.5;
    cfg.schedule.decay_steps = 10;
    SECTION("warmup at 13 steps an epoch, the rest at 4 (resumed after epoch 2 with 4x the batch)") {
        const EpochStepsHistory history{{0, 13}, {2, 4}};
        const Schedule resumed(cfg, 4, 6, history);
        // Warmup ended at global step 26: step 26 has the base rate, 36 half of it.
        CHECK(resumed.learning_rate(26, 2, 0) == Approx(0.1));
        CHECK(resumed.learning_rate(36, 4, 2) == Approx(0.05));
        CHECK(resumed.learning_rate(31, 3, 1) == Approx(0.1 / std::sqrt(2.0)));
        // Without the history it took warmup as 2 x 4 steps: 18 steps into the decay.
        const Schedule guessed(cfg, 4, 6);
        CHECK(guessed.learning_rate(26, 2, 0) == Approx(0.1 * std::pow(0.5, 1.8)));
    }
    SECTION("resumed inside warmup (after epoch 1 of 13 steps): warmup's rest at this run's steps") {
        const EpochStepsHistory history{{0, 13}, {1, 4}};
        const Schedule resumed(cfg, 4, 6, history);
        CHECK(resumed.learning_rate(17, 2, 0) == Approx(0.1));        // 13 + 4: where warmup ends now
        CHECK(resumed.learning_rate(27, 4, 2) == Approx(0.05));       // one decay period past it
        CHECK(resumed.learning_rate(15, 1, 2) == Approx(0.1 * 7 / 8));  // warmup: step 1*4+2 of 2*4, from 1
    }
    SECTION("a history of one entry is the uniform run") {
        const Schedule plain(cfg, 5, 10), with_history(cfg, 5, 10, EpochStepsHistory{{0, 5}});
        for (int64_t step : {0, 9, 10, 11, 20, 35, 49})
            CHECK(with_history.learning_rate(step) == plain.learning_rate(step));
    }
}

TEST_CASE("the steps before an epoch add up each stretch of the history") {
    const EpochStepsHistory history{{0, 13}, {2, 4}, {5, 100}};
    CHECK(steps_before_epoch(history, 0) == 0);
    CHECK(steps_before_epoch(history, 1) == 13);
    CHECK(steps_before_epoch(history, 2) == 26);
    CHECK(steps_before_epoch(history, 4) == 34);
    CHECK(steps_before_epoch(history, 5) == 38);
    CHECK(steps_before_epoch(history, 7) == 238);
    CHECK(steps_before_epoch({}, 3) == 0);
}

TEST_CASE("a history continues at an epoch: later entries dropped, an unchanged count not repeated") {
    const EpochStepsHistory history{{0, 13}, {2, 4}, {5, 100}};
    const auto steps_of = [](const EpochStepsHistory& h) { return format_epoch_steps(h); };
    CHECK(steps_of(continued_at(history, 6, 100)) == "0:13,2:4,5:100");
    CHECK(steps_of(continued_at(history, 6, 7)) == "0:13,2:4,5:100,6:7");
    CHECK(steps_of(continued_at(history, 3, 4)) == "0:13,2:4");  // resumed from an older epoch
    CHECK(steps_of(continued_at(history, 2, 9)) == "0:13,2:9");
    CHECK(steps_of(continued_at(history, 0, 9)) == "0:9");
    CHECK(steps_of(continued_at({}, 0, 9)) == "0:9");
}

TEST_CASE("steps_per_epoch metadata reads back what was written and names what is wrong") {
    EpochStepsHistory read;
    CHECK(parse_epoch_steps("0:1875,3:938", read) == "");
    CHECK(format_epoch_steps(read) == "0:1875,3:938");
    CHECK(read.size() == 2);
    CHECK(read[1].from_epoch == 3);
    CHECK(read[1].steps == 938);
    CHECK(parse_epoch_steps("", read) == "entry '' is not EPOCH:STEPS");
    CHECK(parse_epoch_steps("0:5,", read) == "entry '' is not EPOCH:STEPS");
    CHECK(parse_epoch_steps("0:5;3:2", read) == "entry '0:5;3:2' is not EPOCH:STEPS");
    CHECK(parse_epoch_steps("0:x", read) == "entry '0:x' is not EPOCH:STEPS");
    CHECK(parse_epoch_steps("0:-5", read) == "entry '0:-5' has fewer than 1 step");
    CHECK(parse_epoch_steps("0:0", read) == "entry '0:0' has fewer than 1 step");
    CHECK(parse_epoch_steps("1:5", read) == "entry '1:5' is out of order (epochs rise from 0)");
    CHECK(parse_epoch_steps("0:5,3:2,3:4", read) == "entry '3:4' is out of order (epochs rise from 0)");
    CHECK(parse_epoch_steps("0:5,99999999999999999999:1", read) == "entry '99999999999999999999:1' is not EPOCH:STEPS");
}

TEST_CASE("schedules of absurd lengths do not overflow") {
    auto cfg = with_schedule(ScheduleType::constant, 0.1);
    cfg.schedule.warmup_epochs = 100000000000000;  // 1e14 epochs of 100000 steps: past int64 in steps
    const Schedule s(cfg, 100000, 5);
    CHECK(s.learning_rate(0) == Approx(0.1 / 1e19));
    CHECK(s.learning_rate(0) > 0.0);
    auto cosine = with_schedule(ScheduleType::cosine, 0.1);
    const Schedule long_run(cosine, 100000, 1000000000000000000);
    CHECK(long_run.learning_rate(0) == Approx(0.1));
    CHECK(long_run.learning_rate(1000) <= 0.1);
}

TEST_CASE("one_cycle's cycle_momentum matches PyTorch's OneCycleLR momentum, step by step; -1 without it") {
    // Reference values printed by PyTorch 2.15's OneCycleLR(cycle_momentum=True):
    // Adam's betas[0] with max_lr 0.01, total_steps 100, pct_start 0.3,
    // base_momentum 0.85, max_momentum 0.95 (its defaults).
    OptimizerConfig cfg = with_schedule(ScheduleType::one_cycle, 0.01);
    REQUIRE(Schedule(cfg, 10, 10).momentum(5) == -1.0);  // off by default
    cfg.schedule.cycle_momentum = true;
    const Schedule s(cfg, 10, 10);
    const std::vector<std::pair<int64_t, double>> torch_momenta{
        {0, 0.95},  {1, 0.9497068978577179},  {15, 0.897293054570729}, {28, 0.850293102142282}, {29, 0.85},
        {30, 0.8500503466729342}, {50, 0.8706107373853763}, {98, 0.9499496533270657}, {99, 0.95}};
    for (const auto& [step, m] : torch_momenta) {
        INFO("step " << step);
        REQUIRE(s.momentum(step) == Approx(m).epsilon(1e-12));
    }
    // SGD's momentum, another cycle: OneCycleLR(max_lr=0.02, total_steps=37, pct_start=0.25,
    // div_factor=10, final_div_factor=100, base_momentum=0.8, max_momentum=0.9).
    cfg = with_schedule(ScheduleType::one_cycle, 0.5);
    cfg.schedule.max_lr = 0.02;
    cfg.schedule.pct_start = 0.25;
    cfg.schedule.cycle_momentum = true;
    cfg.schedule.base_momentum = 0.8;
    cfg.schedule.max_momentum = 0.9;
    const Schedule t(cfg, 37, 1);
    const std::vector<std::pair<int64_t, double>> torch_momenta2{{0, 0.9},  {5, 0.833646601834129},
                                                                 {8, 0.8002264038713458}, {9, 0.8001801255728738},
                                                                 {20, 0.8380870704288418}, {36, 0.9}};
    for (const auto& [step, m] : torch_momenta2) {
        INFO("step " << step);
        REQUIRE(t.momentum(step) == Approx(m).epsilon(1e-12));
    }
}

TEST_CASE("one_cycle matches PyTorch's OneCycleLR (two phases, cosine), step by step") {
    // Reference rates printed by PyTorch 1.13's torch.optim.lr_scheduler.OneCycleLR
    // (cycle_momentum=False): max_lr 0.01, total_steps 100, pct_start 0.3,
    // div_factor 25, final_div_factor 1e4 (its defaults but max_lr and steps).
    OptimizerConfig cfg = with_schedule(ScheduleType::one_cycle, 0.01);
    const Schedule s(cfg, 10, 10);
    const std::vector<std::pair<int64_t, double>> torch_rates{
        {0, 0.0003999999999999993}, {1, 0.00042813780565907275}, {15, 0.005459866761210004},
        {28, 0.009971862194340927}, {29, 0.01},                  {30, 0.009994965352845242},
        {50, 0.00793893450575732},  {98, 5.07464715475788e-06},  {99, 4e-08}};
    for (const auto& [step, rate] : torch_rates) {
        INFO("step " << step);
        REQUIRE(s.learning_rate(step) == Approx(rate).epsilon(1e-9));
    }
    // max_lr given apart from learning_rate, a fractional end of the first phase
    // (pct_start 0.25 of 37 steps): OneCycleLR(max_lr=0.02, total_steps=37,
    // pct_start=0.25, div_factor=10, final_div_factor=100).
    cfg = with_schedule(ScheduleType::one_cycle, 0.5);
    cfg.schedule.max_lr = 0.02;
    cfg.schedule.pct_start = 0.25;
    cfg.schedule.div_factor = 10;
    cfg.schedule.final_div_factor = 100;
    const Schedule t(cfg, 37, 1);
    const std::vector<std::pair<int64_t, double>> torch_rates2{{0, 0.0019999999999999983}, {5, 0.013943611669856793},
                                                               {8, 0.019959247303157762},  {9, 0.01996401091053984},
                                                               {20, 0.012390203328317417}, {36, 2e-05}};
    for (const auto& [step, rate] : torch_rates2) {
        INFO("step " << step);
        REQUIRE(t.learning_rate(step) == Approx(rate).epsilon(1e-9));
    }
    // min_lr, when given, is the floor instead of max_lr / div_factor / final_div_factor.
    cfg.schedule.min_lr = 0.001;
    cfg.schedule.min_lr_given = true;
    const Schedule u(cfg, 37, 1);
    REQUIRE(u.learning_rate(36) == Approx(0.001).epsilon(1e-12));
    REQUIRE(u.learning_rate(0) == Approx(0.002).epsilon(1e-12));
}

TEST_CASE("linear decays from the base rate to min_lr over training, after warmup") {
    OptimizerConfig cfg = with_schedule(ScheduleType::linear, 0.1);
    cfg.schedule.min_lr = 0.02;
    const Schedule s(cfg, 10, 5);  // 50 steps
    REQUIRE(s.learning_rate(0) == Approx(0.1));
    REQUIRE(s.learning_rate(25) == Approx(0.1 + (0.02 - 0.1) * 0.5));
    REQUIRE(s.learning_rate(50) == Approx(0.02));
    cfg.schedule.warmup_epochs = 1;  // 10 warmup steps, then 40 of decay
    const Schedule w(cfg, 10, 5);
    REQUIRE(w.learning_rate(4) == Approx(0.1 * 5 / 10));
    REQUIRE(w.learning_rate(10) == Approx(0.1));
    REQUIRE(w.learning_rate(30) == Approx(0.1 + (0.02 - 0.1) * 0.5));
}
