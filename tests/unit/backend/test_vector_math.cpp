// cpu/vector_math.hpp's loops against the formulas written out in double, at
// lengths around their eight lanes and 8 x 8 blocks (edges included).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/vector_math.hpp"

using namespace gputrain;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

}  // namespace

TEST_CASE("softmax_row: the softmax of the first n, zeros to the width, the log-sum-exp returned") {
    for (size_t n : {1u, 2u, 7u, 8u, 9u, 16u, 31u, 64u, 257u}) {
        for (float scale : {1.0f, 30.0f}) {
            INFO("n " << n << " scale " << scale);
            const size_t width = n + 5;
            std::vector<float> x = random_floats(width, static_cast<uint32_t>(n), scale);
            const std::vector<float> in = x;
            const float lse = cpu::softmax_row(x.data(), n, width);
            double mx = in[0];
            for (size_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(in[i]));
            double sum = 0.0;
            for (size_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(in[i]) - mx);
            REQUIRE(lse == Approx(mx + std::log(sum)).epsilon(1e-6));
            double total = 0.0;
            for (size_t i = 0; i < n; ++i) {
                REQUIRE(x[i] == Approx(std::exp(static_cast<double>(in[i]) - mx) / sum).epsilon(1e-5).margin(1e-9));
                total += x[i];
            }
            REQUIRE(total == Approx(1.0).epsilon(1e-5));
            for (size_t i = n; i < width; ++i) REQUIRE(x[i] == 0.0f);
        }
    }
}

TEST_CASE("dot: the sum of products; its eight lanes give the same sum in any order of rows") {
    for (size_t n : {0u, 1u, 5u, 8u, 13u, 32u, 64u, 100u}) {
        INFO("n " << n);
        const std::vector<float> a = random_floats(n, 1, 2.0f), b = random_floats(n, 2, 2.0f);
        double ref = 0.0;
        for (size_t i = 0; i < n; ++i) ref += static_cast<double>(a[i]) * b[i];
        REQUIRE(cpu::dot(a.data(), b.data(), n) == Approx(ref).margin(1e-5));
    }
    // Exactly the lanes' sum: elements 0 and 8 share lane 0 (1 + 1 = 2), which then meets lane 1's 2^24.
    // Added in index order, 2^24 + 1 would round back to 2^24 twice.
    std::vector<float> a(9, 0.0f), ones(9, 1.0f);
    a[0] = 1.0f, a[1] = 16777216.0f, a[8] = 1.0f;
    REQUIRE(cpu::dot(a.data(), ones.data(), 9) == 16777218.0f);
}

TEST_CASE("transpose: every element lands at its mirrored place, blocks of 8 and edges alike") {
    for (size_t rows : {1u, 7u, 8u, 9u, 16u, 64u, 67u})
        for (size_t cols : {1u, 8u, 13u, 32u, 64u}) {
            INFO(rows << " x " << cols);
            const size_t ld_src = cols + 3, ld_dst = rows + 2;
            const std::vector<float> src = random_floats(rows * ld_src, 3, 1.0f);
            std::vector<float> dst(cols * ld_dst, -7.0f);
            cpu::transpose(src.data(), ld_src, rows, cols, dst.data(), ld_dst);
            for (size_t r = 0; r < rows; ++r)
                for (size_t c = 0; c < cols; ++c) REQUIRE(dst[c * ld_dst + r] == src[r * ld_src + c]);
            for (size_t c = 0; c < cols; ++c)
                for (size_t r = rows; r < ld_dst; ++r) REQUIRE(dst[c * ld_dst + r] == -7.0f);  // padding untouched
        }
}
