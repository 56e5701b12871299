// The fused optimizer steps over 10 steps against CpuBackend.
#include <cmath>

#include "backend/ops/optimizers.hpp"
#include "parity.hpp"

using namespace gpu_test;
using gputrain::math::AdamParams;
using gputrain::math::SgdParams;
using gputrain::run_op;
namespace ops = gputrain::ops;

namespace {

constexpr int kSteps = 10;

std::vector<float> gradients(size_t n, int step) { return random_vector(n, 100 + static_cast<uint32_t>(step)); }

// Parameters, first and second moments after kSteps Adam steps, concatenated.
// `offset` floats into each buffer: 1 takes every array off 16-byte alignment
// (the kernel's element-by-element path instead of its float4 one).
std::vector<float> run_adam(Backend& be, size_t n, float weight_decay, size_t offset = 0) {
    const float lr = 1e-2f, beta1 = 0.9f, beta2 = 0.999f;
    Buffers buf(be);
    const auto padded = [&](std::vector<float> values) {
        values.insert(values.begin(), offset, 0.0f);
        return buf.upload(values) + offset;
    };
    float* params = padded(random_vector(n, 7));
    float* m = padded(std::vector<float>(n, 0.0f));
    float* v = padded(std::vector<float>(n, 0.0f));
    for (int t = 1; t <= kSteps; ++t) {
        const float* g = padded(gradients(n, t));
        const float alpha = lr * std::sqrt(1.0f - std::pow(beta2, static_cast<float>(t))) /
                            (1.0f - std::pow(beta1, static_cast<float>(t)));
        be.adam_step(params, g, m, v, n, AdamParams{alpha, beta1, beta2, 1e-7f, lr * weight_decay});
    }
    auto out = buf.download(params, n);
    for (const float* p : {static_cast<const float*>(m), static_cast<const float*>(v)}) {
        const auto moment = buf.download(p, n);
        out.insert(out.end(), moment.begin(), moment.end());
    }
    return out;
}

// Parameters (and velocities, with momentum) after kSteps SGD steps.
std::vector<float> run_sgd(Backend& be, size_t n, const SgdParams& s) {
    Buffers buf(be);
    float* params = buf.upload(random_vector(n, 8));
    // Plain SGD has no velocity buffer.
    float* velocity = s.momentum == 0.0f ? nullptr : buf.zeros<float>(n);
    for (int t = 1; t <= kSteps; ++t) be.sgd_step(params, buf.upload(gradients(n, t)), velocity, n, s);
    auto out = buf.download(params, n);
    if (velocity) {
        const auto vel = buf.download(velocity, n);
        out.insert(out.end(), vel.begin(), vel.end());
    }
    return out;
}

}  // namespace

TEST_CASE("adam_step (Adam and AdamW) matches the CPU over 10 steps") {
    const size_t n = GENERATE(as<size_t>{}, 1, 7, 33, 1000, 4097);
    const float weight_decay = GENERATE(0.0f, 0.01f);
    INFO("n " << n << " weight_decay " << weight_decay);
    CpuBackend cpu;
    CudaBackend gpu(0);
    // Contraction into FMAs may differ between the compilers: an ulp per step.
    require_close(run_adam(gpu, n, weight_decay), run_adam(cpu, n, weight_decay), 1e-6, 1e-7);
}

TEST_CASE("adam_step's four-at-a-time path updates bit for bit as its element path") {
    const size_t n = GENERATE(as<size_t>{}, 1, 4, 7, 4097, 100003);
    INFO("n " << n);
    CudaBackend gpu(0);
    require_identical(run_adam(gpu, n, 0.01f, 0), run_adam(gpu, n, 0.01f, 1));
}

TEST_CASE("sgd_step (plain, momentum, Nesterov) matches the CPU over 10 steps") {
    const size_t n = GENERATE(as<size_t>{}, 1, 7, 33, 1000, 4097);
    const SgdParams s = GENERATE(SgdParams{0.05f, 0.0f, false}, SgdParams{0.05f, 0.9f, false},
                                 SgdParams{0.05f, 0.9f, true});
    INFO("n " << n << " momentum " << s.momentum << " nesterov " << s.nesterov);
    CpuBackend cpu;
    CudaBackend gpu(0);
    // FMA contraction differs between the compilers, and momentum carries
    // each step's ulp into the next: 2.5e-6 relative after 10 steps on an H200.
    require_close(run_sgd(gpu, n, s), run_sgd(cpu, n, s), 1e-5, 1e-7);
}

TEST_CASE("the rmsprop op (plain, momentum, centered; a skipped step) matches the CPU over 10 steps") {
    const size_t n = GENERATE(as<size_t>{}, 1, 1000, 4099);
    for (const auto [momentum, centered] : {std::pair{0.0f, 0}, std::pair{0.9f, 0}, std::pair{0.5f, 1}}) {
        INFO("n " << n << ", momentum " << momentum << ", centered " << centered);
        const auto run = [&](Backend& be) {
            Buffers buf(be);
            float* params = buf.upload(random_vector(n, 7));
            float* v = buf.upload(std::vector<float>(n, 0.0f));
            float* mom = momentum > 0 ? buf.upload(std::vector<float>(n, 0.0f)) : nullptr;
            float* mg = centered ? buf.upload(std::vector<float>(n, 0.0f)) : nullptr;
            auto* scalars = buf.zeros<gputrain::math::RmspropParams>(1);
            auto* skip = buf.zeros<int32_t>(1);
            for (int t = 1; t <= kSteps; ++t) {
                gputrain::math::RmspropParams r{1e-2f / static_cast<float>(t), 0.9f, momentum, 1e-7f, 0.0f, centered};
                be.upload(scalars, &r, sizeof r);
                const int32_t skipped = t == 4 ? 1 : 0;  // step 4 changes nothing
                be.upload(skip, &skipped, sizeof skipped);
                run_op(be, ops::RmspropStep{params, buf.upload(gradients(n, t)), v, mom, mg, n, scalars, skip});
            }
            auto out = buf.download(params, n);
            const auto state = buf.download(v, n);
            out.insert(out.end(), state.begin(), state.end());
            return out;
        };
        CpuBackend cpu;
        CudaBackend gpu(0);
        require_close(run(gpu), run(cpu), 1e-5, 1e-7);
    }
}

TEST_CASE("training.ema's EmaUpdate: 10 steps toward moving weights match the CPU; decay 0 copies; skip holds") {
    const size_t n = 10007;
    const auto run = [&](Backend& be) {
        Buffers buf(be);
        float* average = buf.upload(random_vector(n, 41));
        const float* decay = buf.upload(std::vector<float>{0.99f});
        const int32_t* go = buf.upload(std::vector<int32_t>{0});
        for (int step = 0; step < kSteps; ++step) {
            const float* w = buf.upload(random_vector(n, 50 + static_cast<uint32_t>(step)));
            run_op(be, ops::EmaUpdate{average, w, n, decay, go});
        }
        auto out = buf.download(average, n);
        const int32_t* stop = buf.upload(std::vector<int32_t>{1});
        const float* w = buf.upload(random_vector(n, 99));
        run_op(be, ops::EmaUpdate{average, w, n, decay, stop});  // skipped: unchanged
        const auto held = buf.download(average, n);
        const float* zero = buf.upload(std::vector<float>{0.0f});
        run_op(be, ops::EmaUpdate{average, w, n, zero, nullptr});  // decay 0: the weights
        const auto copied = buf.download(average, n);
        REQUIRE(held == out);
        REQUIRE(copied == random_vector(n, 99));
        return out;
    };
    CpuBackend cpu;
    CudaBackend gpu(0);
    require_close(run(gpu), run(cpu), 1e-6, 1e-7);
}
