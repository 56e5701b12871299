#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/ops/elementwise.hpp"

using gputrain::CpuBackend;
using gputrain::run_op;
namespace ops = gputrain::ops;

namespace {

struct DropoutResult {
    std::vector<float> y, mask;
};

DropoutResult run_dropout(CpuBackend& be, const std::vector<float>& x, float rate, uint64_t key,
                          uint64_t first_index) {
    DropoutResult r{std::vector<float>(x.size()), std::vector<float>(x.size())};
    be.dropout_forward(x.data(), r.y.data(), r.mask.data(), x.size(), rate, key, first_index);
    return r;
}

std::vector<float> ramp(size_t n) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = 0.5f + static_cast<float>(i % 97) * 0.01f;
    return x;
}

}  // namespace

TEST_CASE("dropout keeps about 1 - rate of 1e5 elements, scaled by 1 / (1 - rate)") {
    const float rate = GENERATE(0.1f, 0.3f, 0.5f, 0.8f);
    INFO("rate " << rate);
    CpuBackend be;
    const size_t n = 100000;
    const auto x = ramp(n);
    const auto r = run_dropout(be, x, rate, 1234, 0);
    const double keep_scale = 1.0 / (1.0 - rate);
    size_t kept = 0;
    double sum_x = 0, sum_y = 0;
    for (size_t i = 0; i < n; ++i) {
        const bool keep = r.mask[i] != 0.0f;
        kept += keep ? 1 : 0;
        if (keep) {
            REQUIRE(r.mask[i] == Approx(keep_scale).epsilon(1e-6));
            REQUIRE(r.y[i] == Approx(x[i] * keep_scale).epsilon(1e-6));
        } else {
            REQUIRE(r.y[i] == 0.0f);
        }
        sum_x += x[i];
        sum_y += r.y[i];
    }
    // Binomial standard deviation sqrt(rate (1 - rate) / n) <= 0.0016: 0.01 is over 6 sigma.
    REQUIRE(static_cast<double>(kept) / n == Approx(1.0 - rate).margin(0.01));
    // Inverted dropout preserves the expectation.
    REQUIRE(sum_y / sum_x == Approx(1.0).margin(0.03));
}

TEST_CASE("dropout with rate 0 is the identity") {
    CpuBackend be;
    const auto x = ramp(1000);
    const auto r = run_dropout(be, x, 0.0f, 7, 0);
    REQUIRE(r.y == x);
    for (float m : r.mask) REQUIRE(m == 1.0f);
}

TEST_CASE("dropout masks depend only on (key, index)") {
    CpuBackend be;
    const size_t n = 20000;
    const auto x = ramp(n);
    const auto a = run_dropout(be, x, 0.4f, 99, 500);
    const auto b = run_dropout(be, std::vector<float>(n, 1.0f), 0.4f, 99, 500);
    REQUIRE(run_dropout(be, x, 0.4f, 99, 500).mask == a.mask);  // repeatable
    REQUIRE(b.mask == a.mask);                                  // independent of the values

    // A neighbouring key gives an unrelated mask: agreement p^2 + (1-p)^2 = 0.52 for p = 0.4.
    const auto c = run_dropout(be, x, 0.4f, 100, 500);
    size_t agree = 0;
    for (size_t i = 0; i < n; ++i) agree += (a.mask[i] != 0.0f) == (c.mask[i] != 0.0f) ? 1 : 0;
    REQUIRE(static_cast<double>(agree) / n == Approx(0.52).margin(0.02));
}

TEST_CASE("dropout over a range equals the matching slice of a longer call (sharding)") {
    CpuBackend be;
    const size_t n = 4096;
    const uint64_t key = 0xDEADBEEFull, base = 1000;
    const auto x = ramp(n);
    const auto whole = run_dropout(be, x, 0.25f, key, base);
    // Split unevenly, as replicas with different shard sizes would.
    const std::vector<size_t> cuts{0, 1, 700, 2049, 4000, n};
    for (size_t s = 0; s + 1 < cuts.size(); ++s) {
        const size_t begin = cuts[s], end = cuts[s + 1];
        const std::vector<float> part_x(x.begin() + begin, x.begin() + end);
        const auto part = run_dropout(be, part_x, 0.25f, key, base + begin);
        INFO("slice [" << begin << ", " << end << ")");
        REQUIRE(part.mask == std::vector<float>(whole.mask.begin() + begin, whole.mask.begin() + end));
        REQUIRE(part.y == std::vector<float>(whole.y.begin() + begin, whole.y.begin() + end));
    }
}

TEST_CASE("dropout backward: multiplying by the saved mask") {
    CpuBackend be;
    const size_t n = 257;
    const auto x = ramp(n);
    const auto r = run_dropout(be, x, 0.5f, 3, 0);
    std::vector<float> dy(n), dx(n);
    for (size_t i = 0; i < n; ++i) dy[i] = 1.0f - 0.003f * i;
    run_op(be, ops::Multiply{dy.data(), r.mask.data(), dx.data(), n});
    for (size_t i = 0; i < n; ++i) {
        // y = x * mask, so dy/dx = mask exactly.
        REQUIRE(dx[i] == Approx(double(dy[i]) * (r.y[i] == 0.0f ? 0.0 : r.y[i] / double(x[i]))).epsilon(1e-6));
    }
}

TEST_CASE("hash_uniform lies in [0, 1) with mean near 1/2") {
    double sum = 0;
    const int n = 100000;
    for (int i = 0; i < n; ++i) {
        const float u = gputrain::math::hash_uniform(42, static_cast<uint64_t>(i));
        REQUIRE(u >= 0.0f);
        REQUIRE(u < 1.0f);
        sum += u;
    }
    REQUIRE(sum / n == Approx(0.5).margin(0.005));
}
