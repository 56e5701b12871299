// What lets the GPU step run without the host waiting: the finite-check
// tally, small uploads, the guarded optimizer steps, and graph capture and
// replay, each against CpuBackend or against running the calls directly.
#include <limits>

#include "parity.hpp"

using namespace gpu_test;
using gputrain::math::AdamParams;
using gputrain::math::SgdParams;

namespace {

// The guard words after checking each vector in turn.
std::vector<int32_t> tallies(Backend& be, const std::vector<std::vector<float>>& checks) {
    Buffers buf(be);
    int32_t* guard = buf.zeros<int32_t>(Backend::kGuardWords);
    std::vector<int32_t> out;
    for (const auto& x : checks) {
        be.check_finite(x.empty() ? nullptr : buf.upload(x), x.size(), guard);
        const auto words = buf.download(guard, Backend::kGuardWords);
        out.insert(out.end(), words.begin(), words.end());
    }
    be.record_finite(guard, false);
    be.record_finite(guard, true);
    const auto words = buf.download(guard, Backend::kGuardWords);
    out.insert(out.end(), words.begin(), words.end());
    return out;
}

// Two copies of the same parameters, each with its own Adam moments: one
// stepped directly ([0]), one through the guarded or recorded path ([1]).
struct TwinAdam {
    TwinAdam(Buffers& buf, size_t n, uint32_t seed) : initial(random_vector(n, seed)) {
        for (int i = 0; i < 2; ++i) {
            params[i] = buf.upload(initial);
            m[i] = buf.zeros<float>(n);
            v[i] = buf.zeros<float>(n);
        }
        grads = buf.upload(random_vector(n, seed + 1));
    }
    std::vector<float> initial;
    float* params[2];
    float* m[2];
    float* v[2];
    float* grads;
};

}  // namespace

TEST_CASE("check_finite and record_finite tally like the CPU, at awkward sizes") {
    // 3000017: more blocks than one launch has (kMaxBlocks), so threads stride.
    const size_t n = GENERATE(as<size_t>{}, 1, 255, 257, 100003, 3000017);
    INFO("n " << n);
    auto clean = random_vector(n, 3);
    auto inf_last = clean, nan_first = clean;
    inf_last[n - 1] = std::numeric_limits<float>::infinity();
    nan_first[0] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<std::vector<float>> checks{clean, inf_last, clean, nan_first, {}};
    CpuBackend cpu;
    CudaBackend gpu(0);
    const auto expected = tallies(cpu, checks);
    REQUIRE(expected[4 * 1 + 3] == 2);  // the CPU's own record: the second check was the first bad one
    REQUIRE(tallies(gpu, checks) == expected);
}

TEST_CASE("upload writes its bytes in stream order, aligned or not") {
    CudaBackend gpu(0);
    Buffers buf(gpu);
    auto* dst = buf.zeros<unsigned char>(80);
    std::vector<unsigned char> bytes(Backend::kUploadBytes);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(3 * i + 1);
    gpu.upload(dst, bytes.data(), bytes.size());             // whole words
    gpu.upload(dst + 65, bytes.data(), 7);                    // an odd place, an odd size
    bytes.assign(bytes.size(), 0);                            // the source may be reused at once
    const auto back = buf.download(dst, 80);
    for (size_t i = 0; i < 64; ++i) REQUIRE(back[i] == static_cast<unsigned char>(3 * i + 1));
    REQUIRE(back[64] == 0);
    for (size_t i = 0; i < 7; ++i) REQUIRE(back[65 + i] == static_cast<unsigned char>(3 * i + 1));
    REQUIRE(back[72] == 0);
    REQUIRE_THROWS(gpu.upload(dst, bytes.data(), Backend::kUploadBytes + 1));
}

TEST_CASE("Guarded Adam and SGD match the plain steps and skip on the flag") {
    const size_t n = GENERATE(as<size_t>{}, 1, 33, 4097);
    INFO("n " << n);
    CudaBackend gpu(0);
    Buffers buf(gpu);
    const AdamParams a{1e-2f, 0.9f, 0.999f, 1e-7f, 1e-4f};
    TwinAdam t(buf, n, 11);
    auto* scalars = buf.zeros<AdamParams>(1);
    int32_t* flags = buf.upload(std::vector<int32_t>{0, 1});
    gpu.upload(scalars, &a, sizeof a);
    gpu.adam_step(t.params[0], t.grads, t.m[0], t.v[0], n, a);
    gpu.adam_step_guarded(t.params[1], t.grads, t.m[1], t.v[1], n, scalars, flags + 1);  // skipped
    REQUIRE(buf.download(t.params[1], n) == t.initial);
    REQUIRE(buf.download(t.m[1], n) == std::vector<float>(n, 0.0f));
    gpu.adam_step_guarded(t.params[1], t.grads, t.m[1], t.v[1], n, scalars, flags);
    REQUIRE(buf.download(t.params[1], n) == buf.download(t.params[0], n));
    REQUIRE(buf.download(t.v[1], n) == buf.download(t.v[0], n));

    float* plain = t.params[0];
    float* guarded = t.params[1];
    float* grads = t.grads;
    const SgdParams s{0.05f, 0.9f, true};
    auto* sgd_scalars = buf.zeros<SgdParams>(1);
    gpu.upload(sgd_scalars, &s, sizeof s);
    float* vel1 = buf.zeros<float>(n);
    float* vel2 = buf.zeros<float>(n);
    gpu.sgd_step(plain, grads, vel1, n, s);
    gpu.sgd_step_guarded(guarded, grads, vel2, n, sgd_scalars, flags + 1);  // skipped
    REQUIRE(buf.download(vel2, n) == std::vector<float>(n, 0.0f));
    gpu.sgd_step_guarded(guarded, grads, vel2, n, sgd_scalars, nullptr);
    REQUIRE(buf.download(guarded, n) == buf.download(plain, n));
}

TEST_CASE("A recorded graph replays the recorded work with the values in memory at replay") {
    CudaBackend gpu(0);
    Buffers buf(gpu);
    const size_t n = 1000;
    TwinAdam t(buf, n, 21);
    int32_t* guard = buf.zeros<int32_t>(Backend::kGuardWords);
    auto* scalars = buf.zeros<AdamParams>(1);
    const auto step_params = [](int step) {
        const float alpha = 1e-2f * std::sqrt(1.0f - std::pow(0.999f, static_cast<float>(step))) /
                            (1.0f - std::pow(0.9f, static_cast<float>(step)));
        return AdamParams{alpha, 0.9f, 0.999f, 1e-7f, 0.0f};
    };
    // Recording runs nothing.
    gpu.begin_capture();
    gpu.check_finite(t.grads, n, guard);
    gpu.adam_step_guarded(t.params[1], t.grads, t.m[1], t.v[1], n, scalars, guard);
    const int graph = gpu.end_capture();
    REQUIRE(buf.download(t.params[1], n) == t.initial);
    REQUIRE(buf.download(guard, Backend::kGuardWords) == std::vector<int32_t>(Backend::kGuardWords, 0));
    for (int step = 1; step <= 3; ++step) {
        const AdamParams a = step_params(step);
        gpu.adam_step(t.params[0], t.grads, t.m[0], t.v[0], n, a);
        gpu.upload(scalars, &a, sizeof a);
        gpu.replay(graph);
    }
    REQUIRE(buf.download(t.params[1], n) == buf.download(t.params[0], n));
    REQUIRE(buf.download(guard, Backend::kGuardWords) == std::vector<int32_t>{0, 0, 3, 0});
    REQUIRE_THROWS_WITH(gpu.replay(graph + 1), Catch::Contains("no recorded graph"));
}

TEST_CASE("A step that cannot be recorded says so and leaves the stream usable") {
    CudaBackend gpu(0);
    Buffers buf(gpu);
    float* x = buf.upload(std::vector<float>{1.0f, 2.0f});
    gpu.begin_capture();
    gpu.scale(x, 2, 3.0f);
    float host[2];
    // A copy to pageable host memory waits for the stream: not allowed while recording.
    REQUIRE_THROWS(gpu.copy_to_host(host, x, sizeof host));
    REQUIRE_THROWS_WITH(gpu.end_capture(), Catch::Contains("could not be recorded as a CUDA graph"));
    gpu.scale(x, 2, 2.0f);
    REQUIRE(buf.download(x, 2) == std::vector<float>{2.0f, 4.0f});  // the recorded scale never ran
}

TEST_CASE("dropout_forward_keyed reads its key from memory and matches the CPU's dropout_forward") {
    const size_t n = GENERATE(as<size_t>{}, 1, 257, 10007);
    INFO("n " << n);
    const uint64_t key = 0x9e3779b97f4a7c15ull;
    const std::vector<uint32_t> words{static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
    const auto x = random_vector(n, 31);
    CpuBackend cpu;
    std::vector<float> y(n), mask(n);
    cpu.dropout_forward(x.data(), y.data(), mask.data(), n, 0.3f, key, 17);
    CudaBackend gpu(0);
    Buffers buf(gpu);
    float* gy = buf.zeros<float>(n);
    float* gmask = buf.zeros<float>(n);
    gpu.dropout_forward_keyed(buf.upload(x), gy, gmask, n, 0.3f, buf.upload(words), 17);
    REQUIRE(buf.download(gy, n) == y);
    REQUIRE(buf.download(gmask, n) == mask);
}
