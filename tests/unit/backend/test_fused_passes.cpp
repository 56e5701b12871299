// The fused bias + activation passes of CpuBackend against the plain pairs
// they replace (bit for bit) and against sums and formulas in double.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"
#include "random_data.hpp"

using test_data::random_vector;

using gputrain::Activation;
using gputrain::CpuBackend;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double reference(Activation a, double x) {
    switch (a) {
        case Activation::relu: return x > 0 ? x : 0;
        case Activation::sigmoid: return 1.0 / (1.0 + std::exp(-x));
        case Activation::tanh: return std::tanh(x);
        case Activation::gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
        default: break;
    }
    FAIL("not element-wise");
    return 0;
}

// d/dx of reference(a, x), in double.
double reference_slope(Activation a, double x) {
    switch (a) {
        case Activation::relu: return x > 0 ? 1 : 0;
        case Activation::sigmoid: {
            const double s = 1.0 / (1.0 + std::exp(-x));
            return s * (1 - s);
        }
        case Activation::tanh: return 1 - std::tanh(x) * std::tanh(x);
        case Activation::gelu:
            return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
        default: break;
    }
    FAIL("not element-wise");
    return 0;
}

struct Shape2 {
    int rows, cols;
};

}  // namespace

TEST_CASE("bias_activation_forward equals add_bias then activation_forward, bit for bit") {
    const Activation a = GENERATE(Activation::relu, Activation::sigmoid, Activation::tanh, Activation::gelu);
    const Shape2 s = GENERATE(Shape2{1, 1}, Shape2{3, 7}, Shape2{33, 129}, Shape2{5, 1});
    const bool with_bias = GENERATE(true, false);
    INFO(gputrain::activation_name(a) << " " << s.rows << "x" << s.cols << (with_bias ? " with bias" : " no bias"));
    CpuBackend be;
    const size_t n = static_cast<size_t>(s.rows) * s.cols;
    const auto z0 = random_vector(n, 1, -3.0f, 3.0f);
    const auto bias = random_vector(static_cast<size_t>(s.cols), 2, -3.0f, 3.0f);

    auto z_plain = z0;
    std::vector<float> y_plain(n);
    if (with_bias) be.add_bias(z_plain.data(), bias.data(), s.rows, s.cols);
    be.activation_forward(a, z_plain.data(), y_plain.data(), n);

    auto z_fused = z0;
    std::vector<float> y_fused(n, -7.0f);
    be.bias_activation_forward(a, z_fused.data(), with_bias ? bias.data() : nullptr, y_fused.data(), s.rows, s.cols);

    REQUIRE(same_bits(z_fused, z_plain));  // z keeps the pre-activation for the backward pass
    REQUIRE(same_bits(y_fused, y_plain));
    // In place (z is y, as a relu dense layer runs it): the same y.
    auto y_in_place = z0;
    be.bias_activation_forward(a, y_in_place.data(), with_bias ? bias.data() : nullptr, y_in_place.data(), s.rows,
                               s.cols);
    REQUIRE(same_bits(y_in_place, y_plain));
    for (size_t i = 0; i < n; ++i) {
        const double pre = static_cast<double>(z0[i]) + (with_bias ? bias[i % s.cols] : 0.0f);
        REQUIRE(y_fused[i] == Approx(reference(a, pre)).epsilon(1e-5).margin(1e-6));
    }
}

TEST_CASE("activation_bias_backward equals activation_backward then sum_rows, bit for bit") {
    const Activation a = GENERATE(Activation::relu, Activation::sigmoid, Activation::tanh, Activation::gelu);
    const Shape2 s = GENERATE(Shape2{1, 1}, Shape2{3, 7}, Shape2{33, 129}, Shape2{257, 3});
    INFO(gputrain::activation_name(a) << " " << s.rows << "x" << s.cols);
    CpuBackend be;
    const size_t n = static_cast<size_t>(s.rows) * s.cols;
    const auto z = random_vector(n, 3, -3.0f, 3.0f);
    std::vector<float> y(n);
    be.activation_forward(a, z.data(), y.data(), n);
    const auto dy = random_vector(n, 4, -1.0f, 1.0f);

    std::vector<float> dz_plain(n), db_plain(static_cast<size_t>(s.cols));
    be.activation_backward(a, z.data(), y.data(), dy.data(), dz_plain.data(), n);
    be.sum_rows(dz_plain.data(), db_plain.data(), s.rows, s.cols);

    SECTION("into a buffer of its own") {
        std::vector<float> dz(n, 5.0f), db(static_cast<size_t>(s.cols), 5.0f);
        be.activation_bias_backward(a, z.data(), y.data(), dy.data(), dz.data(), db.data(), s.rows, s.cols);
        REQUIRE(same_bits(dz, dz_plain));
        REQUIRE(same_bits(db, db_plain));
        // The bias gradient against a sum in double of dy * a'(z).
        for (int c = 0; c < s.cols; ++c) {
            double sum = 0.0;
            for (int r = 0; r < s.rows; ++r) {
                const size_t i = static_cast<size_t>(r) * s.cols + c;
                sum += dy[i] * reference_slope(a, z[i]);
            }
            REQUIRE(db[static_cast<size_t>(c)] == Approx(sum).epsilon(1e-4).margin(1e-4));
        }
    }
    SECTION("over z itself, as dense and conv2d call it") {
        auto dz = z;
        std::vector<float> db(static_cast<size_t>(s.cols));
        be.activation_bias_backward(a, dz.data(), y.data(), dy.data(), dz.data(), db.data(), s.rows, s.cols);
        REQUIRE(same_bits(dz, dz_plain));
        REQUIRE(same_bits(db, db_plain));
    }
    SECTION("without a bias") {
        std::vector<float> dz(n);
        be.activation_bias_backward(a, z.data(), y.data(), dy.data(), dz.data(), nullptr, s.rows, s.cols);
        REQUIRE(same_bits(dz, dz_plain));
    }
}

TEST_CASE("activation_bias_backward over no rows writes a zero bias gradient, as sum_rows does") {
    CpuBackend be;
    std::vector<float> db(4, 9.0f);
    const float unused = 0.0f;
    be.activation_bias_backward(Activation::relu, &unused, &unused, &unused, nullptr, db.data(), 0, 4);
    REQUIRE(db == std::vector<float>(4, 0.0f));
}

TEST_CASE("The fused passes refuse linear and softmax, naming them") {
    CpuBackend be;
    std::vector<float> z(6), y(6), db(3);
    REQUIRE_THROWS_WITH(be.bias_activation_forward(Activation::softmax, z.data(), nullptr, y.data(), 2, 3),
                        "cpu: bias_activation_forward: softmax is not element-wise");
    REQUIRE_THROWS_WITH(
        be.activation_bias_backward(Activation::linear, z.data(), y.data(), y.data(), z.data(), db.data(), 2, 3),
        "cpu: activation_bias_backward: linear is not element-wise");
}

TEST_CASE("The copy forms of the fused passes refuse a backend without 16-bit copies before writing anything") {
    CpuBackend be;  // computes in fp32: gemm_copy_bytes() == 0
    REQUIRE(be.gemm_copy_bytes() == 0);
    std::vector<float> z{1.0f, -2.0f, 3.0f, -4.0f}, y(4, 7.0f), dz(4, 5.0f), db(2, 9.0f);
    std::vector<uint16_t> copy(4, 0);
    const std::vector<float> bias{0.5f, 0.25f};
    REQUIRE_THROWS_WITH(be.bias_activation_forward_copy(Activation::relu, z.data(), bias.data(), y.data(),
                                                        copy.data(), 2, 2),
                        "cpu: bias_activation_forward_copy: this backend makes no 16-bit copies");
    CHECK(z == std::vector<float>{1.0f, -2.0f, 3.0f, -4.0f});
    CHECK(y == std::vector<float>(4, 7.0f));
    REQUIRE_THROWS_WITH(be.activation_bias_backward_copy(Activation::relu, z.data(), y.data(), y.data(), dz.data(),
                                                         copy.data(), db.data(), 2, 2),
                        "cpu: activation_bias_backward_copy: this backend makes no 16-bit copies");
    CHECK(dz == std::vector<float>(4, 5.0f));
    CHECK(db == std::vector<float>(2, 9.0f));
}
