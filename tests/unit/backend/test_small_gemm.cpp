// cpu::small_gemm against naive loops. Its documented order of operations
// (cpu_small_gemm.hpp) is replayed in float with std::fma, so the results must
// be bit-identical; a double-precision product checks that this order computes
// alpha * op(A) * B + beta * C within the rounding bound of a k-term sum.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/cpu_features.hpp"
#include "backend/cpu/cpu_small_gemm.hpp"

using gputrain::CpuBackend;
namespace cpu = gputrain::cpu;

namespace {

constexpr float kPad = -777.0f;  // sentinel in the padding columns beyond each matrix's width

struct Case {
    bool trans_a;
    int m, n, k;
    int pad_a, pad_b, pad_c;  // extra columns: ld = width + pad
    float alpha, beta;
};

std::vector<float> random_matrix(int rows, int width, int pad, std::mt19937& rng) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> out(static_cast<size_t>(rows) * (width + pad), kPad);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < width; ++c) out[static_cast<size_t>(r) * (width + pad) + c] = d(rng);
    return out;
}

float a_at(const std::vector<float>& a, int lda, bool trans, int i, int p) {
    return trans ? a[static_cast<size_t>(p) * lda + i] : a[static_cast<size_t>(i) * lda + p];
}

void check(const Case& g, uint32_t seed) {
    INFO("trans_a=" << g.trans_a << " m=" << g.m << " n=" << g.n << " k=" << g.k << " alpha=" << g.alpha
                    << " beta=" << g.beta << " pads=" << g.pad_a << "," << g.pad_b << "," << g.pad_c);
    std::mt19937 rng(seed);
    const int a_rows = g.trans_a ? g.k : g.m, a_width = g.trans_a ? g.m : g.k;
    const int lda = a_width + g.pad_a, ldb = g.n + g.pad_b, ldc = g.n + g.pad_c;
    const auto a = random_matrix(a_rows, a_width, g.pad_a, rng);
    const auto b = random_matrix(g.k, g.n, g.pad_b, rng);
    auto b_at = [&](int p, int j) { return b[static_cast<size_t>(p) * ldb + j]; };
    auto c = random_matrix(g.m, g.n, g.pad_c, rng);
    if (g.beta == 0.0f)  // beta 0 must not read C: NaN there would show
        for (int i = 0; i < g.m; ++i)
            std::fill_n(c.begin() + static_cast<std::ptrdiff_t>(i) * ldc, g.n, std::numeric_limits<float>::quiet_NaN());
    const auto c0 = c;

    cpu::small_gemm(g.trans_a, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb, g.beta, c.data(), ldc);

    for (int i = 0; i < g.m; ++i) {
        for (int j = 0; j < g.n; ++j) {
            const size_t at = static_cast<size_t>(i) * ldc + j;
            // The documented order, in float.
            float replay = 0.0f;
            for (int p0 = 0; p0 < g.k; p0 += cpu::kSmallGemmBlockK) {
                float sum = 0.0f;
                for (int p = p0; p < std::min(g.k, p0 + cpu::kSmallGemmBlockK); ++p)
                    sum = std::fma(a_at(a, lda, g.trans_a, i, p), b_at(p, j), sum);
                if (g.alpha != 1.0f) sum *= g.alpha;
                const float beta = p0 == 0 ? g.beta : 1.0f;
                const float old = p0 == 0 ? c0[at] : replay;
                replay = beta != 0.0f ? std::fma(beta, old, sum) : sum;
            }
            // The math, in double, with the rounding bound of a k-term float sum.
            double exact = 0.0, magnitude = 0.0;
            for (int p = 0; p < g.k; ++p) {
                const double t = static_cast<double>(a_at(a, lda, g.trans_a, i, p)) * b_at(p, j);
                exact += t;
                magnitude += std::abs(t);
            }
            exact *= g.alpha;
            if (g.beta != 0.0f) exact += static_cast<double>(g.beta) * c0[at];
            const double old_term = g.beta != 0.0f ? std::abs(static_cast<double>(g.beta) * c0[at]) : 0.0;
            const double bound = (g.k + 4) * 6e-8 * (std::abs(g.alpha) * magnitude + old_term) + 1e-30;
            INFO("C(" << i << "," << j << ") = " << c[at] << ", replayed " << replay << ", exact " << exact);
            REQUIRE(c[at] == replay);
            REQUIRE(std::abs(c[at] - exact) <= bound);
        }
        for (int j = g.n; j < ldc; ++j) REQUIRE(c[static_cast<size_t>(i) * ldc + j] == kPad);
    }
}

}  // namespace

TEST_CASE("small_gemm matches the naive loop bit for bit, for odd shapes, both A layouts, beta 0 and 1") {
    if (!cpu::has_avx2_fma()) {
        WARN("this CPU has no AVX2+FMA: small_gemm is never called here");
        return;
    }
    const bool trans_a = GENERATE(false, true);
    const float beta = GENERATE(0.0f, 1.0f);
    uint32_t seed = 10;
    // Rows around the 6-row tile, columns around the 16-column tile and its two
    // 8-lane halves, depths across the k-block boundary.
    for (int m : {1, 5, 6, 7, 13})
        for (int n : {1, 7, 8, 9, 16, 17, 33})
            for (int k : {1, 3, 8, 9, 32})
                check({trans_a, m, n, k, 0, 0, 0, 1.0f, beta}, seed++);
    for (int k : {cpu::kSmallGemmBlockK - 1, cpu::kSmallGemmBlockK, cpu::kSmallGemmBlockK + 1, 600})
        check({trans_a, 7, 19, k, 0, 0, 0, 1.0f, beta}, seed++);
}

TEST_CASE("small_gemm honours leading dimensions wider than the matrices and never writes the padding") {
    if (!cpu::has_avx2_fma()) return;
    const bool trans_a = GENERATE(false, true);
    const float beta = GENERATE(0.0f, 1.0f);
    check({trans_a, 11, 21, 37, 5, 3, 7, 1.0f, beta}, 1);
    check({trans_a, 6, 16, 300, 1, 16, 1, 1.0f, beta}, 2);
    check({trans_a, 1, 1, 1, 9, 9, 9, 1.0f, beta}, 3);
}

TEST_CASE("small_gemm scales by alpha and by a beta other than 0 and 1") {
    if (!cpu::has_avx2_fma()) return;
    const bool trans_a = GENERATE(false, true);
    check({trans_a, 9, 23, 17, 2, 1, 3, -0.5f, 0.0f}, 1);
    check({trans_a, 9, 23, 17, 2, 1, 3, 0.75f, 0.5f}, 2);
    check({trans_a, 5, 10, 290, 0, 0, 0, 2.0f, -1.5f}, 3);
}

TEST_CASE("small_gemm on the reference MLP's shapes (batch 32 on one replica and 16 on each of two)") {
    if (!cpu::has_avx2_fma()) return;
    for (int rows : {32, 16}) {
        check({false, rows, 128, 784, 0, 0, 0, 1.0f, 0.0f}, 1);  // forward: x W1
        check({true, 784, 128, rows, 0, 0, 0, 1.0f, 0.0f}, 2);   // dW1 = x^T dz
        check({false, rows, 10, 128, 0, 0, 0, 1.0f, 0.0f}, 3);   // forward: h W2
        check({true, 128, 10, rows, 0, 0, 0, 1.0f, 0.0f}, 4);    // dW2 = h^T dz
    }
}

TEST_CASE("CpuBackend::gemm on the MLP's largest shapes matches a double reference") {
    // The shapes CpuBackend::gemm hands to small_gemm on an AVX2 machine.
    std::mt19937 rng(7);
    for (const bool trans_a : {false, true}) {
        const int m = 32, n = 128, k = 784;
        const auto a = random_matrix(trans_a ? k : m, trans_a ? m : k, 0, rng);
        const auto b = random_matrix(k, n, 0, rng);
        std::vector<float> c(static_cast<size_t>(m) * n), expected(c.size());
        CpuBackend be;
        be.gemm(trans_a, false, m, n, k, 1.0f, a.data(), trans_a ? m : k, b.data(), n, 0.0f, c.data(), n);
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) {
                double acc = 0.0;
                for (int p = 0; p < k; ++p)
                    acc += static_cast<double>(a_at(a, trans_a ? m : k, trans_a, i, p)) * b[static_cast<size_t>(p) * n + j];
                REQUIRE(c[static_cast<size_t>(i) * n + j] == Approx(acc).epsilon(1e-5).margin(1e-4));
            }
    }
}
