// The pieces that let a training step run without the host waiting on it:
// the finite-check tally (Backend::check_finite), small uploads, and the
// optimizer steps that read their scalars from backend memory and skip on a flag.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"

using gputrain::Backend;
using gputrain::CpuBackend;
namespace math = gputrain::math;

TEST_CASE("check_finite tallies each call: this call, bad calls, calls, the first bad one") {
    CpuBackend be;
    std::vector<int32_t> guard(Backend::kGuardWords, 0);
    std::vector<float> x(1000, 0.25f);
    be.check_finite(x.data(), x.size(), guard.data());
    CHECK(guard == std::vector<int32_t>{0, 0, 1, 0});
    x[999] = std::numeric_limits<float>::infinity();  // the last element: no early exit hides it
    be.check_finite(x.data(), x.size(), guard.data());
    CHECK(guard == std::vector<int32_t>{1, 1, 2, 2});  // the first bad call had index 1
    x[999] = 0.0f;
    be.check_finite(x.data(), x.size(), guard.data());
    CHECK(guard == std::vector<int32_t>{0, 1, 3, 2});
    x[0] = std::nanf("");
    be.check_finite(x.data(), x.size(), guard.data());
    CHECK(guard == std::vector<int32_t>{1, 2, 4, 2});  // still the first one
    be.record_finite(guard.data(), true);
    CHECK(guard == std::vector<int32_t>{0, 2, 5, 2});
    be.record_finite(guard.data(), false);
    CHECK(guard == std::vector<int32_t>{1, 3, 6, 2});
    be.check_finite(x.data(), 0, guard.data());  // nothing to check: finite
    CHECK(guard == std::vector<int32_t>{0, 3, 7, 2});
}

TEST_CASE("upload copies up to kUploadBytes and refuses more") {
    CpuBackend be;
    const math::AdamParams a{0.5f, 0.9f, 0.999f, 1e-7f, 0.25f};
    math::AdamParams out{};
    be.upload(&out, &a, sizeof a);
    CHECK(out.alpha == 0.5f);
    CHECK(out.decay == 0.25f);
    std::vector<char> big(Backend::kUploadBytes + 1), dst(big.size());
    REQUIRE_THROWS_WITH(be.upload(dst.data(), big.data(), big.size()),
                        "upload: 65 bytes; at most 64 (use copy_to_device)");
}

TEST_CASE("Guarded optimizer steps equal the plain ones, and change nothing when told to skip") {
    CpuBackend be;
    const size_t n = 37;
    std::vector<float> p0(n), g(n);
    for (size_t i = 0; i < n; ++i) {
        p0[i] = 0.1f * static_cast<float>(i) - 1.5f;
        g[i] = std::sin(static_cast<float>(i));
    }
    const math::AdamParams a{1e-2f, 0.9f, 0.999f, 1e-7f, 1e-4f};
    const math::SgdParams s{0.05f, 0.9f, true};
    const int32_t go = 0, stop = 1;

    std::vector<float> p1 = p0, m1(n), v1(n), p2 = p0, m2(n), v2(n);
    be.adam_step(p1.data(), g.data(), m1.data(), v1.data(), n, a);
    be.adam_step_guarded(p2.data(), g.data(), m2.data(), v2.data(), n, &a, &go);
    CHECK(p1 == p2);
    CHECK(m1 == m2);
    CHECK(v1 == v2);
    be.adam_step_guarded(p2.data(), g.data(), m2.data(), v2.data(), n, &a, &stop);
    CHECK(p1 == p2);  // skipped: parameters and moments as they were
    CHECK(m1 == m2);
    CHECK(v1 == v2);
    be.adam_step_guarded(p2.data(), g.data(), m2.data(), v2.data(), n, &a, nullptr);  // no flag: always
    CHECK(p1 != p2);

    std::vector<float> q1 = p0, vel1(n), q2 = p0, vel2(n);
    be.sgd_step(q1.data(), g.data(), vel1.data(), n, s);
    be.sgd_step_guarded(q2.data(), g.data(), vel2.data(), n, &s, &go);
    CHECK(q1 == q2);
    CHECK(vel1 == vel2);
    be.sgd_step_guarded(q2.data(), g.data(), vel2.data(), n, &s, &stop);
    CHECK(q1 == q2);
    CHECK(vel1 == vel2);
    const math::SgdParams plain{0.05f, 0.0f, false};  // no momentum: no velocity buffer
    be.sgd_step_guarded(q2.data(), g.data(), nullptr, n, &plain, &go);
    for (size_t i = 0; i < n; ++i) CHECK(q2[i] == q1[i] - 0.05f * g[i]);
}
