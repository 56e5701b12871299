#include <catch2/catch.hpp>

#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "optim/optimizer.hpp"

using gputrain::CpuBackend;
using gputrain::config::OptimizerConfig;
using gputrain::config::OptimizerType;

namespace {

OptimizerConfig sgd_config(double lr, double momentum, bool nesterov) {
    OptimizerConfig cfg;
    cfg.type = OptimizerType::sgd;
    cfg.learning_rate = lr;
    cfg.momentum = momentum;
    cfg.nesterov = nesterov;
    return cfg;
}

const std::vector<std::vector<float>> kGrads{{0.5f, -1.0f, 2.0f}, {0.25f, 0.5f, -1.0f}, {-0.75f, 0.0f, 1.0f}};
const std::vector<double> kRates{0.1, 0.1, 0.05};  // a schedule may change the rate between steps

}  // namespace

TEST_CASE("plain SGD: p -= lr * g, with no state") {
    CpuBackend be;
    const auto cfg = sgd_config(0.1, 0.0, false);
    auto opt = gputrain::optim::make_optimizer(cfg, be, 3);
    REQUIRE(opt->type() == "sgd");
    REQUIRE(opt->state().empty());
    std::vector<float> p{1.0f, 2.0f, -3.0f};
    // By hand: step 1 (lr 0.1)  -> 0.95, 2.1, -3.2
    //          step 2 (lr 0.1)  -> 0.925, 2.05, -3.1
    //          step 3 (lr 0.05) -> 0.9625, 2.05, -3.15
    const std::vector<std::vector<double>> expected{{0.95, 2.1, -3.2}, {0.925, 2.05, -3.1}, {0.9625, 2.05, -3.15}};
    for (int t = 0; t < 3; ++t) {
        opt->step(p.data(), kGrads[t].data(), kRates[t], t + 1);
        for (int i = 0; i < 3; ++i) REQUIRE(p[i] == Approx(expected[t][i]).epsilon(1e-6));
    }
}

TEST_CASE("SGD with momentum: v = m v - lr g; p += v") {
    CpuBackend be;
    const auto cfg = sgd_config(0.1, 0.9, false);
    auto opt = gputrain::optim::make_optimizer(cfg, be, 3);
    const auto state = opt->state();
    REQUIRE(state.size() == 1);
    REQUIRE(state[0].name == "velocity");
    for (int i = 0; i < 3; ++i) REQUIRE(state[0].data[i] == 0.0f);

    std::vector<float> p{1.0f, 2.0f, -3.0f};
    // By hand, element 0: v1 = -0.05, p = 0.95; v2 = -0.045 - 0.025 = -0.07, p = 0.88;
    //   v3 = -0.063 + 0.0375 = -0.0255, p = 0.8545.
    // element 1: v1 = 0.1, p = 2.1; v2 = 0.09 - 0.05 = 0.04, p = 2.14; v3 = 0.036, p = 2.176.
    // element 2: v1 = -0.2, p = -3.2; v2 = -0.18 + 0.1 = -0.08, p = -3.28; v3 = -0.072 - 0.05 = -0.122, p = -3.402.
    const std::vector<std::vector<double>> v_expected{{-0.05, 0.1, -0.2}, {-0.07, 0.04, -0.08}, {-0.0255, 0.036, -0.122}};
    const std::vector<std::vector<double>> p_expected{{0.95, 2.1, -3.2}, {0.88, 2.14, -3.28}, {0.8545, 2.176, -3.402}};
    for (int t = 0; t < 3; ++t) {
        opt->step(p.data(), kGrads[t].data(), kRates[t], t + 1);
        for (int i = 0; i < 3; ++i) {
            INFO("step " << t + 1 << " param " << i);
            REQUIRE(state[0].data[i] == Approx(v_expected[t][i]).epsilon(1e-5));
            REQUIRE(p[i] == Approx(p_expected[t][i]).epsilon(1e-6));
        }
    }
}

TEST_CASE("SGD with Nesterov momentum: v = m v - lr g; p += m v - lr g") {
    CpuBackend be;
    const auto cfg = sgd_config(0.1, 0.9, true);
    auto opt = gputrain::optim::make_optimizer(cfg, be, 3);
    REQUIRE(opt->state().size() == 1);
    const float* velocity = opt->state()[0].data;
    std::vector<float> p{1.0f, 2.0f, -3.0f};
    // Same velocities as plain momentum; the parameter moves by 0.9 v - lr g.
    // element 0: 0.9(-0.05) - 0.05 = -0.095 -> 0.905; 0.9(-0.07) - 0.025 = -0.088 -> 0.817;
    //   0.9(-0.0255) + 0.0375 = 0.01455 -> 0.83155.
    // element 1: 0.09 + 0.1 = 0.19 -> 2.19; 0.036 - 0.05 = -0.014 -> 2.176; 0.0324 - 0 -> 2.2084.
    // element 2: -0.18 - 0.2 = -0.38 -> -3.38; -0.072 + 0.1 = 0.028 -> -3.352; -0.1098 - 0.05 = -0.1598 -> -3.5118.
    const std::vector<std::vector<double>> v_expected{{-0.05, 0.1, -0.2}, {-0.07, 0.04, -0.08}, {-0.0255, 0.036, -0.122}};
    const std::vector<std::vector<double>> p_expected{
        {0.905, 2.19, -3.38}, {0.817, 2.176, -3.352}, {0.83155, 2.2084, -3.5118}};
    for (int t = 0; t < 3; ++t) {
        opt->step(p.data(), kGrads[t].data(), kRates[t], t + 1);
        for (int i = 0; i < 3; ++i) {
            INFO("step " << t + 1 << " param " << i);
            REQUIRE(velocity[i] == Approx(v_expected[t][i]).epsilon(1e-5));
            REQUIRE(p[i] == Approx(p_expected[t][i]).epsilon(1e-6));
        }
    }
}

TEST_CASE("SGD with momentum minimizes a quadratic") {
    CpuBackend be;
    const bool nesterov = GENERATE(false, true);
    const auto cfg = sgd_config(0.05, 0.9, nesterov);
    auto opt = gputrain::optim::make_optimizer(cfg, be, 2);
    std::vector<float> p{3.0f, -4.0f}, g(2);
    for (int t = 1; t <= 500; ++t) {
        g[0] = 2.0f * (p[0] - 1.0f);
        g[1] = 6.0f * (p[1] + 0.5f);
        opt->step(p.data(), g.data(), cfg.learning_rate, t);
    }
    REQUIRE(p[0] == Approx(1.0).margin(1e-3));
    REQUIRE(p[1] == Approx(-0.5).margin(1e-3));
}
