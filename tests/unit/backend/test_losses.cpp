#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "random_data.hpp"

using test_data::random_vector;

using gputrain::CpuBackend;

namespace {

using RowLoss = std::function<double(const std::vector<double>& row, int label)>;

double log_sum_exp_ce(const std::vector<double>& row, int label) {
    const double mx = *std::max_element(row.begin(), row.end());
    double s = 0;
    for (double v : row) s += std::exp(v - mx);
    return mx + std::log(s) - row[label];
}

double clipped_ce(const std::vector<double>& row, int label) {
    return -std::log(std::clamp(row[label], 1e-7, 1.0 - 1e-7));
}

double mse_one_hot(const std::vector<double>& row, int label) {
    double s = 0;
    for (size_t c = 0; c < row.size(); ++c) {
        const double d = row[c] - (static_cast<int>(c) == label ? 1.0 : 0.0);
        s += d * d;
    }
    return s / row.size();
}

std::vector<double> row_of(const std::vector<float>& x, int r, int cols) {
    return std::vector<double>(x.begin() + r * cols, x.begin() + (r + 1) * cols);
}

double total_loss(const RowLoss& f, const std::vector<float>& x, const std::vector<int32_t>& labels, int cols) {
    double s = 0;
    for (size_t r = 0; r < labels.size(); ++r) s += f(row_of(x, static_cast<int>(r), cols), labels[r]);
    return s;
}

// grad[r, c] == grad_scale * d(sum of row losses)/dx[r, c], by central differences in double.
void check_gradient(const RowLoss& f, const std::vector<float>& x, const std::vector<int32_t>& labels, int cols,
                    float grad_scale, const std::vector<float>& grad) {
    const double h = 1e-4;
    for (size_t r = 0; r < labels.size(); ++r) {
        auto row = row_of(x, static_cast<int>(r), cols);
        for (int c = 0; c < cols; ++c) {
            const double keep = row[c];
            row[c] = keep + h;
            const double lp = f(row, labels[r]);
            row[c] = keep - h;
            const double lm = f(row, labels[r]);
            row[c] = keep;
            INFO("row " << r << " col " << c);
            REQUIRE(grad[r * cols + c] == Approx(grad_scale * (lp - lm) / (2 * h)).epsilon(1e-3).margin(1e-6));
        }
    }
}

// Probabilities: each row a softmax of random logits (sums to 1, all inside the clip range).
std::vector<float> random_probs(int rows, int cols, uint32_t seed) {
    auto p = random_vector(static_cast<size_t>(rows) * cols, seed, -2.0f, 2.0f);
    for (int r = 0; r < rows; ++r) {
        double s = 0;
        for (int c = 0; c < cols; ++c) s += (p[r * cols + c] = std::exp(p[r * cols + c]));
        for (int c = 0; c < cols; ++c) p[r * cols + c] = static_cast<float>(p[r * cols + c] / s);
    }
    return p;
}

int reference_correct(const std::vector<float>& x, const std::vector<int32_t>& labels, int cols) {
    int correct = 0;
    for (size_t r = 0; r < labels.size(); ++r) {
        const auto first = x.begin() + r * cols;
        correct += (std::max_element(first, first + cols) - first) == labels[r] ? 1 : 0;
    }
    return correct;
}

const std::vector<int32_t> kLabels{0, 3, 1, 4, 2, 3};
constexpr int kCols = 5;

}  // namespace

TEST_CASE("softmax_cross_entropy: loss, correct count and gradient") {
    CpuBackend be;
    const auto logits = random_vector(kLabels.size() * kCols, 21, -4.0f, 4.0f);
    const float grad_scale = GENERATE(1.0f, 0.25f);
    std::vector<float> grad(logits.size(), 99.0f), stats{0.0f, 0.0f};
    be.softmax_cross_entropy(logits.data(), kLabels.data(), kLabels.size(), kCols, grad_scale, grad.data(),
                             stats.data(), 0.0f);
    REQUIRE(stats[0] == Approx(total_loss(log_sum_exp_ce, logits, kLabels, kCols)).epsilon(1e-5));
    REQUIRE(stats[1] == reference_correct(logits, kLabels, kCols));
    check_gradient(log_sum_exp_ce, logits, kLabels, kCols, grad_scale, grad);
}

TEST_CASE("softmax_cross_entropy stays finite for logits of +-1e4") {
    CpuBackend be;
    const int cols = 3;
    const std::vector<float> logits{1e4f, -1e4f, 0.0f,   // confident and right
                                    1e4f, -1e4f, 0.0f,   // confident and wrong: loss 2e4
                                    -1e4f, -1e4f, -1e4f};  // all equal: loss log 3
    const std::vector<int32_t> labels{0, 1, 2};
    std::vector<float> grad(logits.size()), stats{0.0f, 0.0f};
    be.softmax_cross_entropy(logits.data(), labels.data(), 3, cols, 1.0f, grad.data(), stats.data(), 0.0f);
    REQUIRE(std::isfinite(stats[0]));
    REQUIRE(stats[0] == Approx(0.0 + 2e4 + std::log(3.0)).epsilon(1e-6));
    for (float g : grad) REQUIRE(std::isfinite(g));
    // Softmax probabilities minus the one-hot label.
    const std::vector<double> expected{0, 0, 0, 1, -1, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3 - 1};
    for (size_t i = 0; i < grad.size(); ++i) REQUIRE(grad[i] == Approx(expected[i]).margin(1e-6));
    // Ties count the first maximal class as the prediction (argmax), like Keras.
    REQUIRE(stats[1] == 1.0f);
}

TEST_CASE("softmax_cross_entropy accepts a null gradient and accumulates stats across calls") {
    CpuBackend be;
    const auto a = random_vector(kLabels.size() * kCols, 22, -3.0f, 3.0f);
    const auto b = random_vector(kLabels.size() * kCols, 23, -3.0f, 3.0f);
    std::vector<float> stats{1.5f, 2.0f};
    be.softmax_cross_entropy(a.data(), kLabels.data(), kLabels.size(), kCols, 1.0f, nullptr, stats.data(), 0.0f);
    be.softmax_cross_entropy(b.data(), kLabels.data(), kLabels.size(), kCols, 1.0f, nullptr, stats.data(), 0.0f);
    const double loss =
        1.5 + total_loss(log_sum_exp_ce, a, kLabels, kCols) + total_loss(log_sum_exp_ce, b, kLabels, kCols);
    REQUIRE(stats[0] == Approx(loss).epsilon(1e-5));
    REQUIRE(stats[1] == 2 + reference_correct(a, kLabels, kCols) + reference_correct(b, kLabels, kCols));
}

TEST_CASE("softmax_cross_entropy may write its gradient over the logits (with and without smoothing)") {
    CpuBackend be;
    for (float smoothing : {0.0f, 0.1f}) {
        INFO("smoothing " << smoothing);
        const auto logits = random_vector(kLabels.size() * kCols, 24, -3.0f, 3.0f);
        std::vector<float> grad(logits.size()), stats{0.0f, 0.0f};
        be.softmax_cross_entropy(logits.data(), kLabels.data(), kLabels.size(), kCols, 0.5f, grad.data(), stats.data(),
                                 smoothing);
        std::vector<float> in_place = logits, stats_in_place{0.0f, 0.0f};
        be.softmax_cross_entropy(in_place.data(), kLabels.data(), kLabels.size(), kCols, 0.5f, in_place.data(),
                                 stats_in_place.data(), smoothing);
        REQUIRE(in_place == grad);
        REQUIRE(stats_in_place == stats);
    }
}

TEST_CASE("softmax_cross_entropy counts exactly the rows whose argmax is the label") {
    CpuBackend be;
    const int cols = 4;
    std::vector<float> logits(5 * cols, 0.0f);
    const std::vector<int32_t> labels{0, 1, 2, 3, 3};
    const std::vector<int> argmax{0, 1, 3, 3, 2};  // right, right, wrong, right, wrong
    for (int r = 0; r < 5; ++r) logits[r * cols + argmax[r]] = 2.0f;
    std::vector<float> stats{0.0f, 0.0f};
    be.softmax_cross_entropy(logits.data(), labels.data(), 5, cols, 1.0f, nullptr, stats.data(), 0.0f);
    REQUIRE(stats[1] == 3.0f);
}

TEST_CASE("cross_entropy_probs: loss and gradient inside the clip range") {
    CpuBackend be;
    const auto probs = random_probs(kLabels.size(), kCols, 24);
    const float grad_scale = GENERATE(1.0f, 0.5f);
    std::vector<float> grad(probs.size(), 99.0f), stats{0.0f, 0.0f};
    be.cross_entropy_probs(probs.data(), kLabels.data(), kLabels.size(), kCols, grad_scale, grad.data(),
                           stats.data(), 0.0f);
    REQUIRE(stats[0] == Approx(total_loss(clipped_ce, probs, kLabels, kCols)).epsilon(1e-5));
    REQUIRE(stats[1] == reference_correct(probs, kLabels, kCols));
    check_gradient(clipped_ce, probs, kLabels, kCols, grad_scale, grad);
}

TEST_CASE("cross_entropy_probs clips probabilities to [1e-7, 1 - 1e-7] like Keras") {
    CpuBackend be;
    const int cols = 2;
    const std::vector<float> probs{0.0f, 1.0f,   // label 0 has probability 0
                                   0.0f, 1.0f,   // label 1 has probability 1
                                   1e-9f, 1.0f};  // below epsilon
    const std::vector<int32_t> labels{0, 1, 0};
    std::vector<float> grad(probs.size(), 99.0f), stats{0.0f, 0.0f};
    be.cross_entropy_probs(probs.data(), labels.data(), 3, cols, 1.0f, grad.data(), stats.data(), 0.0f);
    const double loss = -std::log(1e-7) - std::log(1.0 - 1e-7) - std::log(1e-7);
    REQUIRE(std::isfinite(stats[0]));
    REQUIRE(stats[0] == Approx(loss).epsilon(1e-5));
    // The clip is flat outside the range: no gradient flows through it.
    for (float g : grad) REQUIRE(g == 0.0f);
}

namespace {

// Label smoothing's target row: (1 - eps) at the label plus eps / cols everywhere.
std::vector<double> smoothed_targets(int label, int cols, double eps) {
    std::vector<double> t(cols, eps / cols);
    t[label] += 1.0 - eps;
    return t;
}

RowLoss smoothed_logits_ce(double eps) {
    return [eps](const std::vector<double>& row, int label) {
        const double mx = *std::max_element(row.begin(), row.end());
        double s = 0;
        for (double v : row) s += std::exp(v - mx);
        const double lse = mx + std::log(s);
        const auto t = smoothed_targets(label, static_cast<int>(row.size()), eps);
        double loss = 0;
        for (size_t c = 0; c < row.size(); ++c) loss -= t[c] * (row[c] - lse);
        return loss;
    };
}

RowLoss smoothed_probs_ce(double eps) {
    return [eps](const std::vector<double>& row, int label) {
        const auto t = smoothed_targets(label, static_cast<int>(row.size()), eps);
        double loss = 0;
        for (size_t c = 0; c < row.size(); ++c) loss -= t[c] * std::log(std::clamp(row[c], 1e-7, 1.0 - 1e-7));
        return loss;
    };
}

}  // namespace

TEST_CASE("label smoothing from logits: the loss against the smoothed target row, and its gradient") {
    CpuBackend be;
    const auto logits = random_vector(kLabels.size() * kCols, 28, -4.0f, 4.0f);
    const float eps = GENERATE(0.1f, 0.3f, 0.9f);
    const float grad_scale = 0.25f;
    std::vector<float> grad(logits.size(), 99.0f), stats{0.0f, 0.0f};
    be.softmax_cross_entropy(logits.data(), kLabels.data(), kLabels.size(), kCols, grad_scale, grad.data(),
                             stats.data(), eps);
    REQUIRE(stats[0] == Approx(total_loss(smoothed_logits_ce(eps), logits, kLabels, kCols)).epsilon(1e-5));
    REQUIRE(stats[1] == reference_correct(logits, kLabels, kCols));
    check_gradient(smoothed_logits_ce(eps), logits, kLabels, kCols, grad_scale, grad);
    // The gradient is softmax minus the smoothed target: each row sums to 0.
    for (size_t r = 0; r < kLabels.size(); ++r) {
        double sum = 0;
        for (int c = 0; c < kCols; ++c) sum += grad[r * kCols + c];
        REQUIRE(sum == Approx(0.0).margin(1e-6));
    }
}

TEST_CASE("label smoothing 0.1 of 10 classes: Keras' worked numbers") {
    // Keras' docs: 0.1 gives 0.1 / num_classes to the other labels and 0.9 + 0.1 / num_classes to the label.
    // Uniform logits: every p_c = 0.1, so the loss is log 10 whatever the target, and the gradient is
    // 0.1 - 0.91 = -0.81 at the label and 0.1 - 0.01 = 0.09 elsewhere.
    CpuBackend be;
    const std::vector<float> logits(10, 0.5f);
    const std::vector<int32_t> labels{7};
    std::vector<float> grad(10), stats{0.0f, 0.0f};
    be.softmax_cross_entropy(logits.data(), labels.data(), 1, 10, 1.0f, grad.data(), stats.data(), 0.1f);
    REQUIRE(stats[0] == Approx(std::log(10.0)).epsilon(1e-6));
    for (int c = 0; c < 10; ++c) REQUIRE(grad[c] == Approx(c == 7 ? -0.81 : 0.09).margin(1e-6));
}

TEST_CASE("label smoothing from probabilities: the clipped loss against the smoothed targets, and its gradient") {
    CpuBackend be;
    const auto probs = random_probs(kLabels.size(), kCols, 29);
    const float eps = GENERATE(0.1f, 0.5f);
    std::vector<float> grad(probs.size(), 99.0f), stats{0.0f, 0.0f};
    be.cross_entropy_probs(probs.data(), kLabels.data(), kLabels.size(), kCols, 0.5f, grad.data(), stats.data(), eps);
    REQUIRE(stats[0] == Approx(total_loss(smoothed_probs_ce(eps), probs, kLabels, kCols)).epsilon(1e-5));
    check_gradient(smoothed_probs_ce(eps), probs, kLabels, kCols, 0.5f, grad);
}

TEST_CASE("label smoothing 0 is the one-hot loss, and a small smoothing moves it as the formula says") {
    CpuBackend be;
    const auto logits = random_vector(kLabels.size() * kCols, 30, -4.0f, 4.0f);
    std::vector<float> g0(logits.size()), s0{0, 0};
    be.softmax_cross_entropy(logits.data(), kLabels.data(), kLabels.size(), kCols, 0.5f, g0.data(), s0.data(), 0.0f);
    // The reference: log-sum-exp minus the label's logit, and softmax minus one-hot.
    REQUIRE(s0[0] == Approx(total_loss(log_sum_exp_ce, logits, kLabels, kCols)).epsilon(1e-6));
    // A tiny smoothing moves the loss by about eps * (mean over classes of -log p - (-log p_label)).
    std::vector<float> g1(logits.size()), s1{0, 0};
    be.softmax_cross_entropy(logits.data(), kLabels.data(), kLabels.size(), kCols, 0.5f, g1.data(), s1.data(), 1e-3f);
    REQUIRE(s1[0] != s0[0]);
    REQUIRE(s1[0] == Approx(total_loss(smoothed_logits_ce(1e-3), logits, kLabels, kCols)).epsilon(1e-6));
}

TEST_CASE("mean_squared_error: loss against the one-hot label, averaged over classes, and its gradient") {
    CpuBackend be;
    const auto y = random_vector(kLabels.size() * kCols, 25, -1.0f, 2.0f);
    const float grad_scale = GENERATE(1.0f, 1.0f / 6);
    std::vector<float> grad(y.size(), 99.0f), stats{0.0f, 0.0f};
    be.mean_squared_error(y.data(), kLabels.data(), kLabels.size(), kCols, grad_scale, grad.data(), stats.data());
    REQUIRE(stats[0] == Approx(total_loss(mse_one_hot, y, kLabels, kCols)).epsilon(1e-5));
    REQUIRE(stats[1] == reference_correct(y, kLabels, kCols));
    check_gradient(mse_one_hot, y, kLabels, kCols, grad_scale, grad);
}

TEST_CASE("cross_entropy_probs and mean_squared_error accumulate stats across calls") {
    CpuBackend be;
    const auto p = random_probs(kLabels.size(), kCols, 26);
    const auto q = random_probs(kLabels.size(), kCols, 27);
    std::vector<float> stats{0.0f, 0.0f};
    be.cross_entropy_probs(p.data(), kLabels.data(), kLabels.size(), kCols, 1.0f, nullptr, stats.data(), 0.0f);
    be.cross_entropy_probs(q.data(), kLabels.data(), kLabels.size(), kCols, 1.0f, nullptr, stats.data(), 0.0f);
    REQUIRE(stats[0] ==
            Approx(total_loss(clipped_ce, p, kLabels, kCols) + total_loss(clipped_ce, q, kLabels, kCols)).epsilon(1e-5));
    REQUIRE(stats[1] == reference_correct(p, kLabels, kCols) + reference_correct(q, kLabels, kCols));

    stats = {0.5f, 1.0f};
    be.mean_squared_error(p.data(), kLabels.data(), kLabels.size(), kCols, 1.0f, nullptr, stats.data());
    be.mean_squared_error(q.data(), kLabels.data(), kLabels.size(), kCols, 1.0f, nullptr, stats.data());
    REQUIRE(stats[0] ==
            Approx(0.5 + total_loss(mse_one_hot, p, kLabels, kCols) + total_loss(mse_one_hot, q, kLabels, kCols))
                .epsilon(1e-5));
    REQUIRE(stats[1] == 1 + reference_correct(p, kLabels, kCols) + reference_correct(q, kLabels, kCols));
}

TEST_CASE("a label outside [0, classes) makes the loss NaN on every loss, and is read nowhere") {
    // The loader rejects such labels; the CUDA kernels and these loops share
    // math.hpp's rule for one that gets through anyway (no out-of-bounds read,
    // which AddressSanitizer would report here).
    CpuBackend be;
    const int cols = 3;
    const std::vector<float> p{0.2f, 0.5f, 0.3f, 0.6f, 0.3f, 0.1f};
    for (const int32_t bad : {-1, cols, 1 << 30}) {
        INFO("label " << bad);
        const std::vector<int32_t> labels{1, bad};
        using Fn = std::function<void(const float*, const int32_t*, float*, float*)>;
        const std::vector<Fn> losses{
            [&](const float* x, const int32_t* l, float* g, float* st) { be.softmax_cross_entropy(x, l, 2, cols, 0.5f, g, st, 0.0f); },
            [&](const float* x, const int32_t* l, float* g, float* st) { be.softmax_cross_entropy(x, l, 2, cols, 0.5f, g, st, 0.1f); },
            [&](const float* x, const int32_t* l, float* g, float* st) { be.cross_entropy_probs(x, l, 2, cols, 0.5f, g, st, 0.0f); },
            [&](const float* x, const int32_t* l, float* g, float* st) { be.cross_entropy_probs(x, l, 2, cols, 0.5f, g, st, 0.1f); },
            [&](const float* x, const int32_t* l, float* g, float* st) { be.mean_squared_error(x, l, 2, cols, 0.5f, g, st); }};
        for (const Fn& fn : losses) {
            std::vector<float> grad(p.size(), -7.0f), stats{0.0f, 0.0f};
            fn(p.data(), labels.data(), grad.data(), stats.data());
            REQUIRE(std::isnan(stats[0]));
            REQUIRE(stats[1] == 1.0f);  // row 0's argmax is its label; row 1 counts as wrong
            for (float g : grad) REQUIRE(std::isfinite(g));  // every entry written, none from the bad label
        }
    }
}

// ---- Regression losses: real-valued targets, one per output ----

namespace {

using gputrain::math::RegressionLoss;
using gputrain::math::RegressionMetric;

// Keras' formulas, per element, in double: the row's loss is their mean.
double regression_element(RegressionLoss kind, double diff, double delta) {
    const double a = std::fabs(diff);
    switch (kind) {
        case RegressionLoss::mean_squared_error: return diff * diff;
        case RegressionLoss::mean_absolute_error: return a;
        case RegressionLoss::huber: return a <= delta ? 0.5 * diff * diff : delta * a - 0.5 * delta * delta;
    }
    return 0;
}

double regression_total(RegressionLoss kind, const std::vector<double>& y, const std::vector<float>& t, int cols,
                        double delta) {
    double total = 0;
    for (size_t r = 0; r < t.size() / cols; ++r) {
        double row = 0;
        for (int c = 0; c < cols; ++c) row += regression_element(kind, y[r * cols + c] - t[r * cols + c], delta);
        total += row / cols;
    }
    return total;
}

}  // namespace

TEST_CASE("regression_loss: mse, mae and huber sums, the metric, and gradients by central differences") {
    CpuBackend be;
    const int rows = 6, cols = 3;
    const auto kind = GENERATE(RegressionLoss::mean_squared_error, RegressionLoss::mean_absolute_error,
                               RegressionLoss::huber);
    const float delta = GENERATE(1.0f, 0.5f);
    const float grad_scale = 0.25f;
    const auto y = random_vector(rows * cols, 31, -3.0f, 3.0f);
    const auto t = random_vector(rows * cols, 32, -3.0f, 3.0f);
    const auto metric = GENERATE(RegressionMetric::mae, RegressionMetric::mse);
    std::vector<float> grad(y.size(), 99.0f), stats{0.5f, 1.0f};
    be.regression_loss(y.data(), t.data(), rows, cols, kind, delta, metric, grad_scale, grad.data(), stats.data());
    const std::vector<double> yd(y.begin(), y.end());
    INFO("kind " << static_cast<int>(kind) << " delta " << delta);
    REQUIRE(stats[0] == Approx(0.5 + regression_total(kind, yd, t, cols, delta)).epsilon(1e-6));
    const RegressionLoss metric_as_loss =
        metric == RegressionMetric::mae ? RegressionLoss::mean_absolute_error : RegressionLoss::mean_squared_error;
    REQUIRE(stats[1] == Approx(1.0 + regression_total(metric_as_loss, yd, t, cols, delta)).epsilon(1e-6));
    // No element sits at a kink (|diff| = 0 or delta) for these random values.
    const double h = 1e-4;
    for (size_t i = 0; i < y.size(); ++i) {
        std::vector<double> up = yd, down = yd;
        up[i] += h, down[i] -= h;
        const double numeric =
            (regression_total(kind, up, t, cols, delta) - regression_total(kind, down, t, cols, delta)) / (2 * h);
        INFO("element " << i);
        REQUIRE(grad[i] == Approx(grad_scale * numeric).epsilon(1e-4).margin(1e-6));
    }
}

TEST_CASE("regression_loss: huber switches at delta, the derivative of |0| is 0, a null gradient is allowed") {
    CpuBackend be;
    // diffs: 0, 0.5 (inside delta 1), 2 (outside), -3 (outside)
    const std::vector<float> y{1.0f, 1.5f, 2.0f, -3.0f};
    const std::vector<float> t{1.0f, 1.0f, 0.0f, 0.0f};
    std::vector<float> grad(4), stats{0.0f, 0.0f};
    be.regression_loss(y.data(), t.data(), 4, 1, RegressionLoss::huber, 1.0f, RegressionMetric::mse, 1.0f,
                       grad.data(), stats.data());
    REQUIRE(stats[0] == Approx(0.0 + 0.125 + 1.5 + 2.5));
    REQUIRE(stats[1] == Approx(0.0 + 0.25 + 4.0 + 9.0));
    REQUIRE(grad == std::vector<float>{0.0f, 0.5f, 1.0f, -1.0f});
    be.regression_loss(y.data(), t.data(), 4, 1, RegressionLoss::mean_absolute_error, 1.0f, RegressionMetric::mae,
                       1.0f, grad.data(), stats.data());
    REQUIRE(grad == std::vector<float>{0.0f, 1.0f, 1.0f, -1.0f});
    std::vector<float> only{0.0f, 0.0f};
    be.regression_loss(y.data(), t.data(), 2, 2, RegressionLoss::mean_squared_error, 1.0f, RegressionMetric::mae,
                       1.0f, nullptr, only.data());
    REQUIRE(only[0] == Approx((0.0 + 0.25) / 2 + (4.0 + 9.0) / 2));
    REQUIRE(only[1] == Approx((0.0 + 0.5) / 2 + (2.0 + 3.0) / 2));
}
