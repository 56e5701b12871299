// The step's ops around the optimizer: training.clip_norm's against PyTorch's
// clip_grad_norm_ written out, training.ema's against Keras' formula.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/ops/optimizers.hpp"

using namespace gputrain;

TEST_CASE("ClipByGlobalNorm scales by max_norm / (norm + 1e-6) only when the norm is larger") {
    CpuBackend be;
    const std::vector<float> g0{3.0f, -4.0f, 0.0f, 12.0f};  // norm 13
    std::vector<float> g = g0;
    float norm = 0;
    run_op(be, ops::ClipByGlobalNorm{g.data(), g.size(), 1.0f, &norm});
    REQUIRE(norm == 13.0f);
    for (size_t i = 0; i < g.size(); ++i) REQUIRE(g[i] == Approx(g0[i] * (1.0 / (13.0 + 1e-6))).epsilon(1e-7));
    g = g0;
    run_op(be, ops::ClipByGlobalNorm{g.data(), g.size(), 20.0f, &norm});
    REQUIRE(g == g0);  // below the limit: untouched
    g = g0;
    g[2] = NAN;
    run_op(be, ops::ClipByGlobalNorm{g.data(), g.size(), 1.0f, &norm});
    REQUIRE(std::isnan(norm));
    REQUIRE(g[0] == 3.0f);  // not finite: left for the step guard
}

TEST_CASE("EmaUpdate: average = decay * average + (1 - decay) * weights; decay 0 copies; a skipped step moves nothing") {
    CpuBackend be;
    const std::vector<float> w{1.0f, -2.0f, 0.5f, 8.0f};
    std::vector<float> avg{0.0f, 0.0f, 1.0f, 8.0f};
    float decay = 0.9f;
    int32_t skip = 0;
    run_op(be, ops::EmaUpdate{avg.data(), w.data(), w.size(), &decay, &skip});
    const std::vector<double> expected{0.1, -0.2, 0.95, 8.0};
    for (size_t i = 0; i < w.size(); ++i) REQUIRE(avg[i] == Approx(expected[i]).epsilon(1e-6));
    // Ten more steps toward fixed weights: the gap shrinks by decay^10.
    for (int step = 0; step < 10; ++step) run_op(be, ops::EmaUpdate{avg.data(), w.data(), w.size(), &decay, nullptr});
    for (size_t i = 0; i < w.size(); ++i)
        REQUIRE(avg[i] - w[i] == Approx((expected[i] - w[i]) * std::pow(0.9, 10)).margin(1e-6));
    const std::vector<float> before = avg;
    skip = 1;
    run_op(be, ops::EmaUpdate{avg.data(), w.data(), w.size(), &decay, &skip});
    REQUIRE(avg == before);
    decay = 0.0f;
    run_op(be, ops::EmaUpdate{avg.data(), w.data(), w.size(), &decay, nullptr});
    REQUIRE(avg == w);
}
