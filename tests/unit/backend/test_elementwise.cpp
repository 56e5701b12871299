#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/sizing_backend.hpp"
#include "backend/ops/elementwise.hpp"
#include "random_data.hpp"

using test_data::random_vector;

using gputrain::Activation;
using gputrain::CpuBackend;
using gputrain::SizingBackend;
using gputrain::run_op;
namespace ops = gputrain::ops;

namespace {

// Points across the interesting range, plus a few far out where exp overflows
// if a formula is written naively.
std::vector<float> sample_points() {
    std::vector<float> x;
    for (int i = -80; i <= 80; ++i) x.push_back(0.1f * i + 0.013f);
    for (float v : {-100.0f, -50.0f, -20.0f, 20.0f, 50.0f, 100.0f, 0.0f}) x.push_back(v);
    return x;
}

double reference(Activation a, double x) {
    switch (a) {
        case Activation::linear: return x;
        case Activation::relu: return x > 0 ? x : 0;
        case Activation::sigmoid: return 1.0 / (1.0 + std::exp(-x));
        case Activation::tanh: return std::tanh(x);
        case Activation::gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
        case Activation::softmax: break;
    }
    FAIL("no element-wise reference for softmax");
    return 0;
}

}  // namespace

TEST_CASE("activation_forward matches the std:: formulas (exact erf GELU)") {
    const Activation a =
        GENERATE(Activation::linear, Activation::relu, Activation::sigmoid, Activation::tanh, Activation::gelu);
    INFO(gputrain::activation_name(a));
    CpuBackend be;
    const auto x = sample_points();
    std::vector<float> y(x.size());
    be.activation_forward(a, x.data(), y.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        INFO("x = " << x[i]);
        REQUIRE(std::isfinite(y[i]));
        REQUIRE(y[i] == Approx(reference(a, x[i])).epsilon(1e-5).margin(1e-7));
    }
}

TEST_CASE("GELU is the exact erf form, not the tanh approximation") {
    CpuBackend be;
    const float x = 1.5f;
    float y = 0;
    be.activation_forward(Activation::gelu, &x, &y, 1);
    const double exact = 0.5 * 1.5 * (1.0 + std::erf(1.5 / std::sqrt(2.0)));
    const double approx = 0.5 * 1.5 * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (1.5 + 0.044715 * 1.5 * 1.5 * 1.5)));
    REQUIRE(std::abs(exact - approx) > 1e-4);  // the two differ enough to tell apart
    REQUIRE(y == Approx(exact).epsilon(1e-6));
}

TEST_CASE("activation_backward matches central differences of activation_forward") {
    const Activation a =
        GENERATE(Activation::linear, Activation::relu, Activation::sigmoid, Activation::tanh, Activation::gelu);
    INFO(gputrain::activation_name(a));
    CpuBackend be;
    std::vector<float> x;
    for (int i = -60; i <= 60; ++i)
        if (i != 0) x.push_back(0.1f * i + 0.037f);  // keeps away from the ReLU kink at 0
    const size_t n = x.size();
    const auto dy = random_vector(n, 11, 0.5f, 2.0f);
    std::vector<float> y(n), dx(n);
    be.activation_forward(a, x.data(), y.data(), n);
    be.activation_backward(a, x.data(), y.data(), dy.data(), dx.data(), n);

    const float h = 1e-3f;
    std::vector<float> xp(n), xm(n), yp(n), ym(n);
    for (size_t i = 0; i < n; ++i) {
        xp[i] = x[i] + h;
        xm[i] = x[i] - h;
    }
    be.activation_forward(a, xp.data(), yp.data(), n);
    be.activation_forward(a, xm.data(), ym.data(), n);
    for (size_t i = 0; i < n; ++i) {
        const double slope = (double(yp[i]) - ym[i]) / (double(xp[i]) - xm[i]);
        INFO("x = " << x[i]);
        REQUIRE(dx[i] == Approx(dy[i] * slope).epsilon(1e-2).margin(1e-3));
    }
}

TEST_CASE("GELU's gradient (from x and y = gelu(x)) is Phi(x) + x phi(x) in double, at 0, tiny, and in the tails") {
    CpuBackend be;
    // Subnormals too (this test thread does not flush them): 0.5 there, not y / x of rounded subnormals.
    std::vector<float> x{0.0f,   -0.0f, 1e-30f, -1e-30f, 1e-6f,  -1e-6f, 1e-40f, -3e-45f, 7e-45f,
                         13.0f, 40.0f, -12.0f, -13.5f, -20.0f, -90.0f};
    for (int i = -120; i <= 120; ++i) x.push_back(0.05f * i + 0.0071f);
    const size_t n = x.size();
    std::vector<float> y(n), dx(n), ones(n, 1.0f);
    be.activation_forward(Activation::gelu, x.data(), y.data(), n);
    be.activation_backward(Activation::gelu, x.data(), y.data(), ones.data(), dx.data(), n);
    for (size_t i = 0; i < n; ++i) {
        const double v = x[i];
        const double cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
        const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI);
        INFO("x = " << x[i]);
        REQUIRE(std::isfinite(dx[i]));
        REQUIRE(dx[i] == Approx(cdf + v * pdf).epsilon(2e-6).margin(1e-7));
    }
}

TEST_CASE("softmax_forward rows sum to 1 and match a double reference") {
    CpuBackend be;
    const int rows = 5, cols = 7;
    auto x = random_vector(rows * cols, 3, -5.0f, 5.0f);
    // Large logits: exp(1000) overflows float, the result must not.
    for (int c = 0; c < cols; ++c) {
        x[3 * cols + c] = 1000.0f - c;
        x[4 * cols + c] = -1000.0f + 2.0f * c;
    }
    std::vector<float> y(x.size());
    be.softmax_forward(x.data(), y.data(), rows, cols);
    for (int r = 0; r < rows; ++r) {
        const float* in = &x[r * cols];
        double mx = in[0];
        for (int c = 1; c < cols; ++c) mx = std::max(mx, double(in[c]));
        double denom = 0, row_sum = 0;
        for (int c = 0; c < cols; ++c) denom += std::exp(in[c] - mx);
        for (int c = 0; c < cols; ++c) {
            const float v = y[r * cols + c];
            REQUIRE(std::isfinite(v));
            REQUIRE(v == Approx(std::exp(in[c] - mx) / denom).epsilon(1e-5).margin(1e-7));
            row_sum += v;
        }
        INFO("row " << r);
        REQUIRE(row_sum == Approx(1.0).margin(1e-5));
    }
}

TEST_CASE("softmax_backward matches central differences of softmax_forward") {
    CpuBackend be;
    const int rows = 3, cols = 6;
    const auto x = random_vector(rows * cols, 5, -3.0f, 3.0f);
    const auto w = random_vector(rows * cols, 6);  // upstream gradient: L = sum w * softmax(x)
    std::vector<float> y(x.size()), dx(x.size());
    be.softmax_forward(x.data(), y.data(), rows, cols);
    be.softmax_backward(y.data(), w.data(), dx.data(), rows, cols);

    const float h = 1e-3f;
    std::vector<float> xs(x.size()), ys(x.size());
    auto loss = [&](size_t i, float delta) {
        xs = x;
        xs[i] += delta;
        be.softmax_forward(xs.data(), ys.data(), rows, cols);
        double l = 0;
        for (size_t j = 0; j < ys.size(); ++j) l += double(w[j]) * ys[j];
        return std::pair<double, double>(l, xs[i]);
    };
    for (size_t i = 0; i < x.size(); ++i) {
        const auto [lp, xp] = loss(i, h);
        const auto [lm, xm] = loss(i, -h);
        INFO("element " << i);
        REQUIRE(dx[i] == Approx((lp - lm) / (xp - xm)).epsilon(1e-2).margin(1e-4));
    }
}

TEST_CASE("add_bias adds the bias to every row; sum_rows sums columns") {
    CpuBackend be;
    const int rows = 4, cols = 5;
    const auto y0 = random_vector(rows * cols, 7);
    const auto bias = random_vector(cols, 8);
    auto y = y0;
    be.add_bias(y.data(), bias.data(), rows, cols);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            REQUIRE(y[r * cols + c] == Approx(double(y0[r * cols + c]) + bias[c]).margin(1e-6));

    std::vector<float> db(cols, 123.0f);  // stale contents are overwritten, not added to
    be.sum_rows(y0.data(), db.data(), rows, cols);
    for (int c = 0; c < cols; ++c) {
        double s = 0;
        for (int r = 0; r < rows; ++r) s += y0[r * cols + c];
        REQUIRE(db[c] == Approx(s).margin(1e-5));
    }
}

TEST_CASE("fill, scale and multiply are element-wise") {
    CpuBackend be;
    const size_t n = 37;  // not a multiple of any vector width
    std::vector<float> x(n + 1, -9.0f);
    be.fill(x.data(), n, 2.5f);
    for (size_t i = 0; i < n; ++i) REQUIRE(x[i] == 2.5f);
    REQUIRE(x[n] == -9.0f);

    const auto a = random_vector(n, 9);
    auto s = a;
    be.scale(s.data(), n, -3.0f);
    for (size_t i = 0; i < n; ++i) REQUIRE(s[i] == Approx(-3.0 * a[i]).margin(1e-6));

    const auto b = random_vector(n, 10);
    std::vector<float> out(n);
    run_op(be, ops::Multiply{a.data(), b.data(), out.data(), n});
    for (size_t i = 0; i < n; ++i) REQUIRE(out[i] == Approx(double(a[i]) * b[i]).margin(1e-7));
}

TEST_CASE("accumulate adds in place; copy_strided moves a block of columns and nothing else") {
    CpuBackend be;
    const size_t n = 37;
    const auto x = random_vector(n, 11);
    std::vector<float> y(n + 1, 1.5f);
    run_op(be, ops::Accumulate{y.data(), x.data(), n});
    for (size_t i = 0; i < n; ++i) REQUIRE(y[i] == 1.5f + x[i]);
    REQUIRE(y[n] == 1.5f);

    // Columns 2..4 of a 3 x 7 matrix from a 3 x 3 one.
    const auto src = random_vector(9, 12);
    std::vector<float> dst(21, -1.0f);
    run_op(be, ops::CopyStrided{dst.data() + 2, 7, src.data(), 3, 3, 3});
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 7; ++c)
            REQUIRE(dst[r * 7 + c] == (c >= 2 && c < 5 ? src[r * 3 + c - 2] : -1.0f));
}

namespace {
struct UnknownOp {
    static constexpr const char* kName = "unknown_op";
    float* x;
};
}  // namespace

TEST_CASE("an op without a kernel on this backend is an error naming both; the sizing backend runs none") {
    CpuBackend be;
    float x = 0;
    REQUIRE_THROWS_WITH(run_op(be, UnknownOp{&x}), "cpu: no kernel for op 'unknown_op'");
    SizingBackend sizing;
    float* y = sizing.allocate_floats(4);  // an inaccessible page: a kernel that ran would fault
    run_op(sizing, ops::Accumulate{y, y, 4});
    sizing.release(y);
}

TEST_CASE("linear activation forward and backward are the identity, also in place") {
    CpuBackend be;
    const auto x = random_vector(10, 12);
    auto y = x;
    be.activation_forward(Activation::linear, y.data(), y.data(), y.size());
    REQUIRE(y == x);
    std::vector<float> dx(x.size());
    be.activation_backward(Activation::linear, x.data(), y.data(), x.data(), dx.data(), x.size());
    REQUIRE(dx == x);
}

TEST_CASE("activation names round-trip and unknown names are rejected") {
    for (const auto& name : gputrain::activation_names()) {
        Activation a{};
        REQUIRE(gputrain::parse_activation(name, a));
        REQUIRE(gputrain::activation_name(a) == name);
    }
    Activation a = Activation::relu;
    REQUIRE_FALSE(gputrain::parse_activation("swish", a));
    REQUIRE(a == Activation::relu);
}
