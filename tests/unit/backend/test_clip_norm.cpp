// training.clip_norm's op against PyTorch's clip_grad_norm_ written out.
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
