#include <catch2/catch.hpp>

#include <cblas.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"

using gputrain::CpuBackend;

namespace {

constexpr float kPad = -777.0f;  // sentinel in the padding columns beyond each matrix's width

struct GemmCase {
    bool trans_a, trans_b;
    int m, n, k;
    int pad_a, pad_b, pad_c;  // extra columns: ld = width + pad
    float alpha, beta;
};

// A stored matrix of `rows` x `width` with leading dimension width + pad, padding = kPad.
std::vector<float> random_matrix(int rows, int width, int pad, std::mt19937& rng) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> out(static_cast<size_t>(rows) * (width + pad), kPad);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < width; ++c) out[static_cast<size_t>(r) * (width + pad) + c] = d(rng);
    return out;
}

// Element (i, j) of op(X) where X is stored row-major with leading dimension ld.
double op_at(const std::vector<float>& x, int ld, bool trans, int i, int j) {
    return trans ? x[static_cast<size_t>(j) * ld + i] : x[static_cast<size_t>(i) * ld + j];
}

void check_gemm(const GemmCase& g, uint32_t seed) {
    std::mt19937 rng(seed);
    // Stored shapes: A is m x k (or k x m transposed), B is k x n (or n x k transposed).
    const int a_rows = g.trans_a ? g.k : g.m, a_width = g.trans_a ? g.m : g.k;
    const int b_rows = g.trans_b ? g.n : g.k, b_width = g.trans_b ? g.k : g.n;
    const int lda = a_width + g.pad_a, ldb = b_width + g.pad_b, ldc = g.n + g.pad_c;
    const auto a = random_matrix(a_rows, a_width, g.pad_a, rng);
    const auto b = random_matrix(b_rows, b_width, g.pad_b, rng);
    auto c = random_matrix(g.m, g.n, g.pad_c, rng);
    const auto c0 = c;

    CpuBackend be;
    be.gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb, g.beta, c.data(), ldc);

    for (int i = 0; i < g.m; ++i) {
        for (int j = 0; j < g.n; ++j) {
            double acc = 0.0;
            for (int p = 0; p < g.k; ++p) acc += op_at(a, lda, g.trans_a, i, p) * op_at(b, ldb, g.trans_b, p, j);
            const size_t at = static_cast<size_t>(i) * ldc + j;
            const double expected = g.alpha * acc + g.beta * static_cast<double>(c0[at]);
            INFO("C(" << i << "," << j << ")");
            REQUIRE(c[at] == Approx(expected).epsilon(1e-5).margin(1e-5));
        }
        for (int j = g.n; j < ldc; ++j) REQUIRE(c[static_cast<size_t>(i) * ldc + j] == kPad);
    }
}

}  // namespace

TEST_CASE("gemm matches a double reference for every transpose combination") {
    const bool trans_a = GENERATE(false, true);
    const bool trans_b = GENERATE(false, true);
    const float beta = GENERATE(0.0f, 1.0f);
    INFO("trans_a=" << trans_a << " trans_b=" << trans_b << " beta=" << beta);
    SECTION("small non-square, tight leading dimensions") {
        check_gemm({trans_a, trans_b, 3, 5, 4, 0, 0, 0, 1.0f, beta}, 1);
    }
    SECTION("leading dimensions wider than the matrices") {
        check_gemm({trans_a, trans_b, 4, 3, 6, 3, 2, 5, 1.0f, beta}, 2);
    }
    SECTION("alpha scales the product") {
        check_gemm({trans_a, trans_b, 2, 7, 3, 1, 4, 2, -0.5f, beta}, 3);
    }
    SECTION("larger blocks") {
        check_gemm({trans_a, trans_b, 37, 29, 53, 3, 1, 7, 0.75f, beta}, 4);
    }
    SECTION("vector shapes") {
        check_gemm({trans_a, trans_b, 1, 9, 5, 0, 2, 0, 1.0f, beta}, 5);
        check_gemm({trans_a, trans_b, 9, 1, 5, 2, 0, 3, 1.0f, beta}, 6);
    }
}

TEST_CASE("gemm with beta 0 overwrites C even when it holds NaN") {
    // Buffers come from earlier steps; beta == 0 must not read them (BLAS semantics).
    const int m = 3, n = 4, k = 2;
    const std::vector<float> a{1, 2, 3, 4, 5, 6};           // 3 x 2
    const std::vector<float> b{1, 0, -1, 2, 0, 1, 1, -2};  // 2 x 4
    std::vector<float> c(m * n, std::numeric_limits<float>::quiet_NaN());
    CpuBackend be;
    be.gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            const double expected = double(a[i * k]) * b[j] + double(a[i * k + 1]) * b[n + j];
            REQUIRE(c[i * n + j] == Approx(expected));
        }
}

TEST_CASE("gemm with k == 0 leaves C = beta * C") {
    CpuBackend be;
    const std::vector<float> dummy(8, 1.0f);  // never read: op(A) and op(B) are empty
    const int m = 2, n = 3, ldc = 5;
    std::vector<float> c(static_cast<size_t>(m) * ldc);
    for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(i) + 1.0f;
    const auto c0 = c;

    SECTION("beta 1 keeps C") {
        be.gemm(false, false, m, n, 0, 2.0f, dummy.data(), 1, dummy.data(), n, 1.0f, c.data(), ldc);
        REQUIRE(c == c0);
    }
    SECTION("beta 0 zeroes C, even NaN, and only the m x n block") {
        c[1] = std::numeric_limits<float>::quiet_NaN();
        be.gemm(true, true, m, n, 0, 2.0f, dummy.data(), m, dummy.data(), 1, 0.0f, c.data(), ldc);
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < ldc; ++j) {
                const size_t at = static_cast<size_t>(i) * ldc + j;
                REQUIRE(c[at] == (j < n ? 0.0f : c0[at]));
            }
    }
    SECTION("beta 0.5 halves C") {
        be.gemm(false, true, m, n, 0, 1.0f, dummy.data(), 1, dummy.data(), 1, 0.5f, c.data(), ldc);
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < ldc; ++j) {
                const size_t at = static_cast<size_t>(i) * ldc + j;
                REQUIRE(c[at] == (j < n ? 0.5f * c0[at] : c0[at]));
            }
    }
}

TEST_CASE("gemm with an empty output touches nothing") {
    CpuBackend be;
    const std::vector<float> a(6, 1.0f), b(6, 1.0f);
    std::vector<float> c(6, 3.0f);
    be.gemm(false, false, 0, 3, 2, 1.0f, a.data(), 2, b.data(), 3, 0.0f, c.data(), 3);
    be.gemm(false, false, 3, 0, 2, 1.0f, a.data(), 2, b.data(), 1, 0.0f, c.data(), 1);
    REQUIRE(c == std::vector<float>(6, 3.0f));
}

TEST_CASE("set_cpu_blas_threads sets OpenBLAS's threads; one under ThreadSanitizer") {
    if (gputrain::kBlasOnCallingThread) REQUIRE(openblas_get_num_threads() == 1);  // from before main
    const int before = openblas_get_num_threads();
    gputrain::set_cpu_blas_threads(2);
    REQUIRE(openblas_get_num_threads() == (gputrain::kBlasOnCallingThread ? 1 : 2));
    gputrain::set_cpu_blas_threads(before);
}
