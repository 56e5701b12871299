// RMSprop against Keras' formula written out in double, step by step, and its
// guard (a skipped step changes nothing).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "optim/optimizer.hpp"

using gputrain::CpuBackend;
using gputrain::config::OptimizerConfig;
using gputrain::config::OptimizerType;

namespace {

const std::vector<std::vector<float>> kGrads{
    {0.5f, -1.0f, 2.0f, 0.0f}, {0.25f, 0.5f, -1.0f, 1e-3f}, {-0.75f, 0.0f, 1.0f, -2.0f}, {0.1f, -0.2f, 0.3f, 0.4f}};
const std::vector<double> kRates{0.01, 0.01, 0.005, 0.02};

// Keras' RMSprop.update_step in double.
struct Reference {
    double rho, momentum, epsilon;
    bool centered;
    std::vector<double> p, v, mom, mg;
    void step(const std::vector<float>& g, double lr) {
        for (size_t i = 0; i < p.size(); ++i) {
            v[i] = rho * v[i] + (1 - rho) * g[i] * g[i];
            double denominator = v[i] + epsilon;
            if (centered) {
                mg[i] = rho * mg[i] + (1 - rho) * g[i];
                denominator = v[i] - mg[i] * mg[i] + epsilon;
            }
            const double increment = lr * g[i] / std::sqrt(denominator);
            if (momentum > 0) {
                mom[i] = momentum * mom[i] + increment;
                p[i] -= mom[i];
            } else {
                p[i] -= increment;
            }
        }
    }
};

}  // namespace

TEST_CASE("RMSprop follows Keras' formula: plain, with momentum, centered") {
    struct Case {
        double momentum;
        bool centered;
        size_t slots;
    };
    for (const Case c : {Case{0.0, false, 1}, Case{0.9, false, 2}, Case{0.0, true, 2}, Case{0.5, true, 3}}) {
        INFO("momentum " << c.momentum << ", centered " << c.centered);
        OptimizerConfig cfg;
        cfg.type = OptimizerType::rmsprop;
        cfg.momentum = c.momentum;
        cfg.centered = c.centered;
        CpuBackend be;
        auto opt = gputrain::optim::make_optimizer(cfg, be, 4);
        REQUIRE(opt->type() == "rmsprop");
        const auto slots = opt->state();
        REQUIRE(slots.size() == c.slots);
        REQUIRE(slots[0].name == "rmsprop_v");
        std::vector<float> p{1.0f, 2.0f, -3.0f, 0.5f};
        Reference ref{0.9, c.momentum, 1e-7, c.centered, {1.0, 2.0, -3.0, 0.5}, std::vector<double>(4),
                      std::vector<double>(4), std::vector<double>(4)};
        for (size_t t = 0; t < kGrads.size(); ++t) {
            opt->step(p.data(), kGrads[t].data(), kRates[t], static_cast<int64_t>(t) + 1);
            ref.step(kGrads[t], kRates[t]);
            for (size_t i = 0; i < 4; ++i) REQUIRE(p[i] == Approx(ref.p[i]).epsilon(1e-5).margin(1e-7));
            for (size_t i = 0; i < 4; ++i) REQUIRE(slots[0].data[i] == Approx(ref.v[i]).epsilon(1e-5).margin(1e-12));
        }
    }
}

TEST_CASE("RMSprop's guarded step changes nothing when the step is skipped") {
    OptimizerConfig cfg;
    cfg.type = OptimizerType::rmsprop;
    cfg.momentum = 0.9;
    CpuBackend be;
    auto opt = gputrain::optim::make_optimizer(cfg, be, 4);
    std::vector<float> p{1.0f, 2.0f, -3.0f, 0.5f};
    const std::vector<float> before = p;
    const int32_t skip = 1, go = 0;
    opt->prepare(0.01, 1);
    opt->apply(p.data(), kGrads[0].data(), &skip);
    REQUIRE(p == before);
    for (const auto& slot : opt->state())
        for (size_t i = 0; i < 4; ++i) REQUIRE(slot.data[i] == 0.0f);
    opt->apply(p.data(), kGrads[0].data(), &go);
    REQUIRE(p != before);
}
