// CpuBackend::bind_thread flushes denormals to zero on the calling thread only.
// Each check runs on a thread of its own, so the test runner's thread keeps
// IEEE behaviour for the other tests.
#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"

using gputrain::CpuBackend;

namespace {

// Adam on one parameter whose first moment is denormal and whose gradient is 0:
// returns the new first moment.
float adam_moment_after_step(bool bind) {
    float m_out = -1.0f;
    std::thread t([&] {
        CpuBackend be;
        if (bind) be.bind_thread();
        std::vector<float> p(8, 0.5f), g(8, 0.0f), m(8, 1.0e-39f), v(8, 1.0e-8f);
        const gputrain::math::AdamParams a{1e-3f, 0.9f, 0.999f, 1e-7f, 0.0f};
        be.adam_step(p.data(), g.data(), m.data(), v.data(), p.size(), a);
        m_out = m[7];
    });
    t.join();
    return m_out;
}

}  // namespace

TEST_CASE("bind_thread flushes denormal results to zero on its thread, and only there") {
    // 1e-39 is denormal (below FLT_MIN, 1.18e-38); m decays by beta1 = 0.9.
    const float kept = adam_moment_after_step(false);
    REQUIRE(kept > 0.0f);
    REQUIRE(kept < 1.0e-39f);
    REQUIRE(adam_moment_after_step(true) == 0.0f);

    // The runner's thread is untouched: denormal arithmetic still works here.
    volatile float tiny = 1.0e-39f;
    REQUIRE(tiny * 0.5f > 0.0f);
}
