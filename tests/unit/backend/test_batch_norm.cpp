// CpuBackend batch normalization: each call against a double reference, and
// the backward calls against finite differences of a scalar loss through the
// whole training-mode forward (sums -> finalize -> apply).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "random_data.hpp"

using test_data::random_vector;

using gputrain::CpuBackend;

namespace {

struct Stats {
    std::vector<double> mean, var;  // biased variance
};

Stats reference_stats(const std::vector<float>& x, int rows, int channels) {
    Stats s{std::vector<double>(channels, 0.0), std::vector<double>(channels, 0.0)};
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < channels; ++c) s.mean[c] += x[static_cast<size_t>(r) * channels + c];
    for (int c = 0; c < channels; ++c) s.mean[c] /= rows;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < channels; ++c) {
            const double d = x[static_cast<size_t>(r) * channels + c] - s.mean[c];
            s.var[c] += d * d;
        }
    for (int c = 0; c < channels; ++c) s.var[c] /= rows;
    return s;
}

// The training-mode forward in double, written from the formula (two-pass variance).
std::vector<double> reference_forward(const std::vector<double>& x, const std::vector<double>& gamma,
                                      const std::vector<double>& beta, int rows, int channels, double eps) {
    std::vector<double> y(x.size());
    for (int c = 0; c < channels; ++c) {
        double mean = 0.0, var = 0.0;
        for (int r = 0; r < rows; ++r) mean += x[static_cast<size_t>(r) * channels + c];
        mean /= rows;
        for (int r = 0; r < rows; ++r) {
            const double d = x[static_cast<size_t>(r) * channels + c] - mean;
            var += d * d;
        }
        var /= rows;
        for (int r = 0; r < rows; ++r) {
            const size_t at = static_cast<size_t>(r) * channels + c;
            y[at] = gamma[c] * (x[at] - mean) / std::sqrt(var + eps) + beta[c];
        }
    }
    return y;
}

}  // namespace

TEST_CASE("batch_norm_sums, finalize, apply and inference match the formulas") {
    // 300 channels crosses the backend's 256-channel accumulation block.
    const int channels = GENERATE(1, 5, 300);
    const int rows = 37;
    INFO("channels=" << channels);
    std::mt19937 rng(7 + channels);
    auto x = random_vector(static_cast<size_t>(rows) * channels, rng, -2.0f, 3.0f);
    const auto gamma = random_vector(channels, rng, 0.5f, 1.5f);
    const auto beta = random_vector(channels, rng, -0.5f, 0.5f);
    const Stats ref = reference_stats(x, rows, channels);
    const float eps = 1e-3f, momentum = 0.9f;
    CpuBackend be;

    std::vector<float> mean_invstd(2 * channels), moving_mean(channels), moving_var(channels);
    for (int c = 0; c < channels; ++c) moving_mean[c] = 0.3f + 0.002f * c, moving_var[c] = 1.0f + 0.01f * c;
    const auto old_mean = moving_mean, old_var = moving_var;

    // Sums around a shift (the moving mean, as the layer passes it), and around 0.
    std::vector<float> sums(2 * channels, -1.0f), unshifted(2 * channels, -1.0f);
    be.batch_norm_sums(x.data(), rows, channels, moving_mean.data(), sums.data());
    be.batch_norm_sums(x.data(), rows, channels, nullptr, unshifted.data());
    for (int c = 0; c < channels; ++c) {
        double sum = 0.0, sum_sq = 0.0, plain = 0.0, plain_sq = 0.0;
        for (int r = 0; r < rows; ++r) {
            const double v = x[static_cast<size_t>(r) * channels + c];
            sum += v - old_mean[c];
            sum_sq += (v - old_mean[c]) * (v - old_mean[c]);
            plain += v;
            plain_sq += v * v;
        }
        REQUIRE(sums[c] == Approx(sum).epsilon(1e-6).margin(1e-5));
        REQUIRE(sums[channels + c] == Approx(sum_sq).epsilon(1e-6));
        REQUIRE(unshifted[c] == Approx(plain).epsilon(1e-6).margin(1e-5));
        REQUIRE(unshifted[channels + c] == Approx(plain_sq).epsilon(1e-6));
    }

    // The moving mean is both the shift and updated: each channel's shift is read first.
    be.batch_norm_finalize(sums.data(), static_cast<float>(rows), channels, eps, momentum, moving_mean.data(),
                           mean_invstd.data(), moving_mean.data(), moving_var.data());
    for (int c = 0; c < channels; ++c) {
        INFO("channel " << c);
        REQUIRE(mean_invstd[c] == Approx(ref.mean[c]).margin(1e-5));
        REQUIRE(mean_invstd[channels + c] == Approx(1.0 / std::sqrt(ref.var[c] + eps)).epsilon(1e-5));
        REQUIRE(moving_mean[c] == Approx(momentum * old_mean[c] + (1 - momentum) * ref.mean[c]).margin(1e-5));
        const double unbiased = ref.var[c] * rows / (rows - 1);
        REQUIRE(moving_var[c] == Approx(momentum * old_var[c] + (1 - momentum) * unbiased).epsilon(1e-5));
    }
    SECTION("without moving statistics only mean_invstd is written") {
        std::vector<float> again(2 * channels);
        be.batch_norm_finalize(sums.data(), static_cast<float>(rows), channels, eps, momentum, old_mean.data(),
                               again.data(), nullptr, nullptr);
        REQUIRE(again == mean_invstd);
        std::vector<float> from_zero(2 * channels);
        be.batch_norm_finalize(unshifted.data(), static_cast<float>(rows), channels, eps, momentum, nullptr,
                               from_zero.data(), nullptr, nullptr);
        for (int c = 0; c < 2 * channels; ++c) REQUIRE(from_zero[c] == Approx(mean_invstd[c]).epsilon(1e-5).margin(1e-5));
    }

    std::vector<float> y(x.size());
    be.batch_norm_apply(x.data(), mean_invstd.data(), gamma.data(), beta.data(), y.data(), rows, channels);
    for (size_t i = 0; i < y.size(); ++i) {
        const int c = static_cast<int>(i % channels);
        const double expected = gamma[c] * (x[i] - ref.mean[c]) / std::sqrt(ref.var[c] + eps) + beta[c];
        REQUIRE(y[i] == Approx(expected).margin(2e-5));
    }

    be.batch_norm_inference(x.data(), old_mean.data(), old_var.data(), eps, gamma.data(), beta.data(), y.data(), rows,
                            channels);
    for (size_t i = 0; i < y.size(); ++i) {
        const int c = static_cast<int>(i % channels);
        const double expected = gamma[c] * (x[i] - old_mean[c]) / std::sqrt(old_var[c] + eps) + beta[c];
        REQUIRE(y[i] == Approx(expected).margin(2e-5));
    }
}

TEST_CASE("batch_norm sums around a shift near the mean keep the variance where sums around 0 lose it") {
    // Mean 1000, spread 1: sums of x^2 near 1e6 * rows handed over as float
    // keep about 7 digits, so E[x^2] - E[x]^2 loses the variance's.
    const int rows = 4096;
    std::mt19937 rng(5);
    const auto x = random_vector(rows, rng, 1000.0f - 1.7320508f, 1000.0f + 1.7320508f);  // variance 1
    double mean = 0, var = 0;
    for (float v : x) mean += v;
    mean /= rows;
    for (float v : x) var += (v - mean) * (v - mean);
    var /= rows;
    CpuBackend be;
    const auto invstd_of = [&](const float* shift) {
        std::vector<float> sums(2), mean_invstd(2);
        be.batch_norm_sums(x.data(), rows, 1, shift, sums.data());
        be.batch_norm_finalize(sums.data(), static_cast<float>(rows), 1, 0.0f, 0.0f, shift, mean_invstd.data(),
                               nullptr, nullptr);
        CHECK(mean_invstd[0] == Approx(mean).epsilon(1e-6));
        return static_cast<double>(mean_invstd[1]);
    };
    const float near_mean = 999.5f;
    CHECK(invstd_of(&near_mean) == Approx(1.0 / std::sqrt(var)).epsilon(1e-4));
    CHECK(std::abs(invstd_of(nullptr) * std::sqrt(var) - 1.0) > 1e-3);  // around 0: the digits are gone
}

TEST_CASE("batch_norm_finalize with a count of one row keeps the biased variance for the moving average") {
    CpuBackend be;
    const std::vector<float> sums = {3.0f, 9.0f};  // one row, x = 3: variance 0
    std::vector<float> mean_invstd(2), moving_mean = {1.0f}, moving_var = {2.0f};
    be.batch_norm_finalize(sums.data(), 1.0f, 1, 0.25f, 0.5f, nullptr, mean_invstd.data(), moving_mean.data(),
                           moving_var.data());
    REQUIRE(mean_invstd[0] == 3.0f);
    REQUIRE(mean_invstd[1] == Approx(2.0f));  // 1 / sqrt(0 + 0.25)
    REQUIRE(moving_mean[0] == Approx(2.0f));
    REQUIRE(std::isfinite(moving_var[0]));
    REQUIRE(moving_var[0] == Approx(1.0f));
}

TEST_CASE("batch_norm backward matches finite differences of a loss through sums, finalize and apply") {
    const int channels = GENERATE(1, 3);
    const int rows = 13;
    INFO("channels=" << channels);
    std::mt19937 rng(31 + channels);
    const auto x = random_vector(static_cast<size_t>(rows) * channels, rng, -1.0f, 2.0f);
    const auto gamma = random_vector(channels, rng, 0.5f, 1.5f);
    const auto beta = random_vector(channels, rng, -0.5f, 0.5f);
    const auto r = random_vector(x.size(), rng, -1.0f, 1.0f);  // loss = sum(r * y): dy = r
    const float eps = 1e-3f;
    CpuBackend be;

    std::vector<float> sums(2 * channels), mean_invstd(2 * channels), y(x.size());
    be.batch_norm_sums(x.data(), rows, channels, nullptr, sums.data());
    be.batch_norm_finalize(sums.data(), static_cast<float>(rows), channels, eps, 0.0f, nullptr, mean_invstd.data(),
                           nullptr, nullptr);
    be.batch_norm_apply(x.data(), mean_invstd.data(), gamma.data(), beta.data(), y.data(), rows, channels);
    std::vector<float> grad_sums(2 * channels), dx(x.size());
    be.batch_norm_backward_sums(x.data(), r.data(), mean_invstd.data(), rows, channels, grad_sums.data());
    be.batch_norm_backward_data(x.data(), r.data(), mean_invstd.data(), gamma.data(), grad_sums.data(),
                                static_cast<float>(rows), dx.data(), rows, channels);

    std::vector<double> xd(x.begin(), x.end()), gd(gamma.begin(), gamma.end()), bd(beta.begin(), beta.end());
    auto loss = [&]() {
        const auto yd = reference_forward(xd, gd, bd, rows, channels, eps);
        double l = 0.0;
        for (size_t i = 0; i < yd.size(); ++i) l += r[i] * yd[i];
        return l;
    };
    // The backend's forward is the same function as the reference.
    const auto y_ref = reference_forward(xd, gd, bd, rows, channels, eps);
    for (size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == Approx(y_ref[i]).margin(2e-5));

    auto central_difference = [&](double& v) {
        const double h = 1e-5, saved = v;
        v = saved + h;
        const double up = loss();
        v = saved - h;
        const double down = loss();
        v = saved;
        return (up - down) / (2 * h);
    };
    for (size_t i = 0; i < xd.size(); ++i) {
        INFO("dx[" << i << "]");
        REQUIRE(dx[i] == Approx(central_difference(xd[i])).margin(1e-4));
    }
    for (int c = 0; c < channels; ++c) {
        INFO("channel " << c);
        REQUIRE(grad_sums[c] == Approx(central_difference(bd[c])).margin(1e-4));             // dbeta
        REQUIRE(grad_sums[channels + c] == Approx(central_difference(gd[c])).margin(1e-4));  // dgamma
    }
}
