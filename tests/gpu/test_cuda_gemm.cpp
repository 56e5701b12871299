// cuBLAS GEMM through the row-major/column-major swap against OpenBLAS.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "backend/gemm_input_cast.hpp"
#include "parity.hpp"

using namespace gpu_test;
using gputrain::cast_copy_layout;
using gputrain::CastCopyLayout;

namespace {

constexpr float kPad = -777.0f;  // in the columns beyond each matrix's width: must come back untouched

struct GemmCase {
    bool trans_a, trans_b;
    int m, n, k;
    int pad_a, pad_b, pad_c;  // ld = width + pad
    float alpha, beta;
};

std::vector<float> padded_matrix(int rows, int width, int pad, std::mt19937& rng) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> out(static_cast<size_t>(rows) * (width + pad), kPad);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < width; ++c) out[static_cast<size_t>(r) * (width + pad) + c] = d(rng);
    return out;
}

// The whole C buffer (padding included) after the GEMM on `backend`.
std::vector<float> run_gemm(Backend& backend, const GemmCase& g, uint32_t seed) {
    std::mt19937 rng(seed);
    const int a_rows = g.trans_a ? g.k : g.m, a_width = g.trans_a ? g.m : g.k;
    const int b_rows = g.trans_b ? g.n : g.k, b_width = g.trans_b ? g.k : g.n;
    const auto a = padded_matrix(a_rows, a_width, g.pad_a, rng);
    const auto b = padded_matrix(b_rows, b_width, g.pad_b, rng);
    const auto c = padded_matrix(g.m, g.n, g.pad_c, rng);
    Buffers buf(backend);
    // Empty host matrices (k == 0) still need a valid pointer.
    const float* da = a.empty() ? buf.zeros<float>(1) : buf.upload(a);
    const float* db = b.empty() ? buf.zeros<float>(1) : buf.upload(b);
    float* dc = buf.upload(c);
    backend.gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, da, a_width + g.pad_a, db, b_width + g.pad_b, g.beta,
                 dc, g.n + g.pad_c);
    return buf.download(dc, c.size());
}

void check_gemm(const GemmCase& g, double rel, double abs) {
    INFO("trans_a " << g.trans_a << " trans_b " << g.trans_b << " m " << g.m << " n " << g.n << " k " << g.k
                    << " alpha " << g.alpha << " beta " << g.beta);
    CpuBackend cpu;
    CudaBackend gpu(0);
    const uint32_t seed = static_cast<uint32_t>(g.m * 131 + g.n * 17 + g.k);
    require_close(run_gemm(gpu, g, seed), run_gemm(cpu, g, seed), rel, abs);
}

}  // namespace

TEST_CASE("gemm 1x1x1 matches the CPU for every transpose combination") {
    const bool trans_a = GENERATE(false, true);
    const bool trans_b = GENERATE(false, true);
    check_gemm({trans_a, trans_b, 1, 1, 1, 0, 0, 0, 1.0f, 0.0f}, 1e-4, 1e-4);
    check_gemm({trans_a, trans_b, 1, 1, 1, 2, 3, 1, 0.5f, 0.25f}, 1e-4, 1e-4);
}

TEST_CASE("gemm 17x33x9 with leading dimensions wider than the matrices, every transpose combination") {
    const bool trans_a = GENERATE(false, true);
    const bool trans_b = GENERATE(false, true);
    const float beta = GENERATE(0.0f, 1.0f, -0.5f);
    check_gemm({trans_a, trans_b, 17, 33, 9, 3, 5, 2, 1.5f, beta}, 1e-4, 1e-4);
    check_gemm({trans_a, trans_b, 17, 33, 9, 0, 0, 0, 1.0f, beta}, 1e-4, 1e-4);
}

TEST_CASE("gemm at dense-layer shapes (batch 32, 784 -> 128): forward, weight and input gradients") {
    // forward y = x W, dW = x^T dy, dx = dy W^T
    check_gemm({false, false, 32, 128, 784, 0, 0, 0, 1.0f, 0.0f}, 1e-4, 1e-4);
    check_gemm({true, false, 784, 128, 32, 0, 0, 0, 1.0f, 1.0f}, 1e-4, 1e-4);
    check_gemm({false, true, 32, 784, 128, 0, 0, 0, 1.0f, 0.0f}, 1e-4, 1e-4);
    check_gemm({true, true, 32, 784, 128, 4, 4, 4, 0.5f, 0.5f}, 1e-4, 1e-4);
}

TEST_CASE("gemm with k == 0 scales C by beta (exactly 0 for beta == 0); m or n == 0 does nothing") {
    const bool trans_a = GENERATE(false, true);
    const float beta = GENERATE(0.0f, 0.5f);
    check_gemm({trans_a, false, 3, 4, 0, 0, 0, 2, 1.0f, beta}, 0.0, 0.0);
    check_gemm({trans_a, true, 0, 4, 5, 0, 0, 2, 1.0f, beta}, 0.0, 0.0);
    check_gemm({trans_a, false, 3, 0, 5, 0, 0, 2, 1.0f, beta}, 0.0, 0.0);
}

namespace {
double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
    return worst;
}
}  // namespace

TEST_CASE("training.precision: fp32 by default; tf32/bf16/fp16 GEMMs within their accuracy, and really reduced") {
    CpuBackend cpu;
    CudaBackend gpu(0);
    const GemmCase g{false, false, 32, 128, 784, 0, 0, 0, 1.0f, 0.0f};
    const auto reference = run_gemm(cpu, g, 7);
    require_close(run_gemm(gpu, g, 7), reference, 1e-4, 1e-4);
    const double fp32_error = max_abs_difference(run_gemm(gpu, g, 7), reference);
    struct Mode {
        Precision precision;
        double tolerance;
    };
    // Mantissa bits: tf32 10, fp16 10, bf16 7; inputs in [-1, 1], 784 products per output.
    for (const Mode m : {Mode{Precision::tf32, 5e-2}, Mode{Precision::fp16, 5e-2}, Mode{Precision::bf16, 2e-1}}) {
        gpu.set_precision(m.precision);
        const auto reduced = run_gemm(gpu, g, 7);
        require_close(reduced, reference, m.tolerance, m.tolerance);
        // The mode is really used: rounded inputs move the result well past fp32's own error.
        CHECK(max_abs_difference(reduced, reference) > 10 * fp32_error);
    }
    gpu.set_precision(Precision::fp32);
    require_close(run_gemm(gpu, g, 7), reference, 1e-4, 1e-4);
}

// ---- training.cast_gemm_inputs: 16-bit copies, then cuBLAS's native 16-bit GEMM ----

namespace {

// Round to the nearest bfloat16 (ties to even), as __float2bfloat16_rn does;
// the inputs here are finite.
float round_to_bf16(float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    std::memcpy(&x, &u, sizeof u);
    return x;
}

float round_to_fp16(float x) { return static_cast<float>(static_cast<_Float16>(x)); }

// run_gemm with both inputs rounded on the host first (padding included, which no product reads).
std::vector<float> run_gemm_on_rounded(Backend& backend, const GemmCase& g, uint32_t seed, float (*round)(float)) {
    std::mt19937 rng(seed);
    const int a_rows = g.trans_a ? g.k : g.m, a_width = g.trans_a ? g.m : g.k;
    const int b_rows = g.trans_b ? g.n : g.k, b_width = g.trans_b ? g.k : g.n;
    auto a = padded_matrix(a_rows, a_width, g.pad_a, rng);
    auto b = padded_matrix(b_rows, b_width, g.pad_b, rng);
    const auto c = padded_matrix(g.m, g.n, g.pad_c, rng);
    for (float& x : a) x = round(x);
    for (float& x : b) x = round(x);
    Buffers buf(backend);
    float* dc = buf.upload(c);
    backend.gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, buf.upload(a), a_width + g.pad_a, buf.upload(b),
                 b_width + g.pad_b, g.beta, dc, g.n + g.pad_c);
    return buf.download(dc, c.size());
}

float keep(float x) { return x; }

}  // namespace

TEST_CASE("cast_gemm_inputs: the copies live in scratch reserved up front; a GEMM never allocates") {
    CudaBackend gpu(0);
    gpu.set_precision(Precision::bf16);
    gpu.set_gemm_input_cast(true);
    const GemmCase g{false, false, 32, 128, 784, 0, 0, 0, 1.0f, 0.0f};
    const size_t need = gpu.gemm_scratch_bytes(false, false, 32, 128, 784, 784, 128);
    CHECK(need == 32 * 784 * 2 + 784 * 128 * 2);  // both copies end on a 256-byte boundary here
    REQUIRE_THROWS_WITH(run_gemm(gpu, g, 3), Catch::Contains("needs " + std::to_string(need) +
                                                             " bytes of scratch for its 16-bit inputs, 0 reserved"));
    gpu.reserve_gemm_scratch(need);
    const auto first = run_gemm(gpu, g, 3);
    Buffers buf(gpu);
    const float* a = buf.upload(random_vector(32 * 784, 1));
    const float* b = buf.upload(random_vector(784 * 128, 2));
    float* c = buf.zeros<float>(32 * 128);
    const size_t mallocs = gpu.pool_stats().cuda_malloc_calls;
    for (int i = 0; i < 3; ++i) gpu.gemm(false, false, 32, 128, 784, 1.0f, a, 784, b, 128, 0.0f, c, 128);
    gpu.synchronize();
    CHECK(gpu.pool_stats().cuda_malloc_calls == mallocs);
    CHECK(run_gemm(gpu, g, 3) == first);  // the same kernels on the same inputs: the same bits
    // fp32 and tf32 make no copies: nothing to reserve, the results of the plain path.
    for (const Precision p : {Precision::fp32, Precision::tf32}) {
        gpu.set_precision(p);
        CHECK(gpu.gemm_scratch_bytes(false, false, 32, 128, 784, 784, 128) == 0);
        const auto with_flag = run_gemm(gpu, g, 3);
        gpu.set_gemm_input_cast(false);
        CHECK(run_gemm(gpu, g, 3) == with_flag);
        gpu.set_gemm_input_cast(true);
    }
}

TEST_CASE("cast_gemm_inputs: gemm_copied multiplies gemm_copy's copies as the CPU multiplies the rounded inputs; "
          "gemm() is the same") {
    struct Mode {
        Precision precision;
        float (*round)(float);
    };
    const Mode mode = GENERATE(Mode{Precision::bf16, round_to_bf16}, Mode{Precision::fp16, round_to_fp16});
    const bool trans_a = GENERATE(false, true);
    const bool trans_b = GENERATE(false, true);
    INFO((mode.precision == Precision::bf16 ? "bf16" : "fp16") << " trans_a " << trans_a << " trans_b " << trans_b);
    CpuBackend cpu;
    CudaBackend gpu(0);
    gpu.set_precision(mode.precision);
    gpu.set_gemm_input_cast(true);
    CHECK(gpu.gemm_copy_bytes() == 2);
    // Odd sizes, padded leading dimensions, W1's forward shape and W2's output layer's skinny one.
    for (const GemmCase g : {GemmCase{trans_a, trans_b, 17, 33, 9, 3, 5, 2, 1.5f, -0.5f},
                             GemmCase{trans_a, trans_b, 32, 128, 784, 0, 0, 0, 1.0f, 0.0f},
                             GemmCase{trans_a, trans_b, 1, 1, 1, 0, 0, 0, 1.0f, 0.0f},
                             GemmCase{trans_a, trans_b, 4096, 10, 4096, 0, 0, 0, 1.0f, 0.0f}}) {
        const int lda = (g.trans_a ? g.m : g.k) + g.pad_a, ldb = (g.trans_b ? g.k : g.n) + g.pad_b;
        const CastCopyLayout l = cast_copy_layout(g.trans_a, g.trans_b, g.m, g.n, g.k, lda, ldb);
        // run_gemm's operands, copied by the caller (gemm_copy), multiplied by gemm_copied.
        std::mt19937 rng(5);
        const auto a = padded_matrix(g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.pad_a, rng);
        const auto b = padded_matrix(g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.pad_b, rng);
        const auto c = padded_matrix(g.m, g.n, g.pad_c, rng);
        Buffers buf(gpu);
        void* a16 = buf.zeros<uint16_t>(l.a_elements);
        void* b16 = buf.zeros<uint16_t>(l.b_elements);
        gpu.gemm_copy(buf.upload(a), a16, l.a_elements);
        gpu.gemm_copy(buf.upload(b), b16, l.b_elements);
        float* dc = buf.upload(c);
        gpu.gemm_copied(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, a16, lda, b16, ldb, g.beta, dc, g.n + g.pad_c);
        const auto copied = buf.download(dc, c.size());
        // The CPU's fp32 GEMM of the same operands rounded on the host: only the
        // order of the fp32 sums differs (each 16-bit product is exact in fp32).
        require_close(copied, run_gemm_on_rounded(cpu, g, 5, mode.round), 1e-4, g.k > 1000 ? 1e-3 : 1e-4);
        // gemm() under the cast multiplies the same copies: the same bits.
        gpu.reserve_gemm_scratch(l.total_bytes);
        CHECK(run_gemm(gpu, g, 5) == copied);
        // ... and rounding really happened: unrounded fp32 inputs give another
        // answer. The gap grows like sqrt(k) (fp16: about 1.4e-3 at k = 9, 9e-3 at 784).
        if (g.k > 1) CHECK(max_abs_difference(run_gemm_on_rounded(cpu, g, 5, keep), copied) > 1.5e-4 * std::sqrt(g.k));
    }
    // Without the cast there are no copies to make.
    gpu.set_gemm_input_cast(false);
    CHECK(gpu.gemm_copy_bytes() == 0);
    Buffers buf(gpu);
    REQUIRE_THROWS_WITH(gpu.gemm_copy(buf.zeros<float>(4), buf.zeros<uint16_t>(4), 4),
                        Catch::Contains("makes no 16-bit copies"));
}

TEST_CASE("gemm_copy rounds every element to nearest (even), four at a time where aligned and one at a time elsewhere") {
    const Precision precision = GENERATE(Precision::bf16, Precision::fp16);
    CudaBackend gpu(0);
    gpu.set_precision(precision);
    gpu.set_gemm_input_cast(true);
    // Ordinary values, halfway cases, subnormals and (for fp16) overflow to infinity.
    auto host = random_vector(4099, 31, -3.0f, 3.0f);
    const float special[] = {1.00390625f, 1.01171875f, -1.00390625f, 65519.0f, 65520.0f, 1e6f, -1e6f, 1e-40f, 3e-8f};
    for (size_t i = 0; i < std::size(special); ++i) host[i * 97] = special[i];
    Buffers buf(gpu);
    const float* x = buf.upload(host);
    auto* copy = buf.zeros<uint16_t>(host.size());
    // Offsets that break the 16-byte alignment of x, the 8-byte one of the
    // copy, either or both, and lengths with 0 to 3 elements left after the
    // groups of four.
    for (const size_t offset : {size_t{0}, size_t{1}, size_t{2}, size_t{4}})
        for (const size_t copy_offset : {size_t{0}, size_t{1}, size_t{4}})
        for (const size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{4093}, size_t{4094}, size_t{4095}}) {
            INFO((precision == Precision::bf16 ? "bf16" : "fp16") << " offset " << offset << " copy offset "
                                                                   << copy_offset << " n " << n);
            gpu.fill(reinterpret_cast<float*>(copy), host.size() / 2, 0.0f);
            gpu.gemm_copy(x + offset, copy + copy_offset, n);
            const auto got = buf.download(copy, host.size());
            std::vector<uint16_t> want(host.size(), 0);
            for (size_t i = 0; i < n; ++i) {
                const float v = host[offset + i];
                uint32_t u;
                if (precision == Precision::bf16) {
                    const float r = round_to_bf16(v);
                    std::memcpy(&u, &r, sizeof u);
                    want[copy_offset + i] = static_cast<uint16_t>(u >> 16);
                } else {
                    const _Float16 h = static_cast<_Float16>(v);
                    uint16_t bits;
                    std::memcpy(&bits, &h, sizeof bits);
                    want[copy_offset + i] = bits;
                }
            }
            CHECK(got == want);
        }
}
