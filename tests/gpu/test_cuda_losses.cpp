// The losses against CpuBackend: loss sums and correct counts accumulated into
// stats on the device (atomics across blocks), and the gradients.
#include <cmath>

#include "parity.hpp"

using namespace gpu_test;

namespace {

enum class Loss { softmax_cross_entropy, cross_entropy_probs, mean_squared_error };

struct LossResult {
    std::vector<float> stats;  // {loss sum, correct}
    std::vector<float> grad;
};

// Runs the loss `calls` times on the same stats (which start non-zero, to see
// that they are added to), with or without a gradient.
LossResult run_loss(Backend& be, Loss loss, const std::vector<float>& x, const std::vector<int32_t>& labels, int cols,
                    float grad_scale, bool with_grad, int calls = 1, float smoothing = 0.0f) {
    const int rows = static_cast<int>(labels.size());
    Buffers buf(be);
    const float* dx = buf.upload(x);
    const int32_t* dlabels = buf.upload(labels);
    float* grad = with_grad ? buf.upload(std::vector<float>(x.size(), 99.0f)) : nullptr;
    float* stats = buf.upload(std::vector<float>{1.5f, 2.0f});
    for (int i = 0; i < calls; ++i) {
        switch (loss) {
            case Loss::softmax_cross_entropy:
                be.softmax_cross_entropy(dx, dlabels, rows, cols, grad_scale, grad, stats, smoothing);
                break;
            case Loss::cross_entropy_probs:
                be.cross_entropy_probs(dx, dlabels, rows, cols, grad_scale, grad, stats, smoothing);
                break;
            case Loss::mean_squared_error:
                be.mean_squared_error(dx, dlabels, rows, cols, grad_scale, grad, stats);
                break;
        }
    }
    LossResult out;
    out.stats = buf.download(stats, 2);
    if (grad) out.grad = buf.download(grad, x.size());
    return out;
}

void check_loss(Loss loss, const std::vector<float>& x, const std::vector<int32_t>& labels, int cols,
                float grad_scale, float smoothing = 0.0f) {
    CpuBackend cpu;
    CudaBackend gpu(0);
    const LossResult expected = run_loss(cpu, loss, x, labels, cols, grad_scale, true, 1, smoothing);
    const LossResult got = run_loss(gpu, loss, x, labels, cols, grad_scale, true, 1, smoothing);
    INFO("loss sum: gpu " << got.stats[0] << " cpu " << expected.stats[0]);
    REQUIRE(got.stats[0] == Approx(expected.stats[0]).epsilon(1e-5));
    REQUIRE(got.stats[1] == expected.stats[1]);
    // softmax - onehot cancels near p = 1: an ulp of expf there is an absolute error.
    require_close(got.grad, expected.grad, 1e-5, 1e-6 * grad_scale);

    // Without a gradient the stats are the same; two calls add twice.
    const LossResult stats_only = run_loss(gpu, loss, x, labels, cols, grad_scale, false, 2, smoothing);
    REQUIRE(stats_only.stats[0] - 1.5f == Approx(2.0 * (got.stats[0] - 1.5f)).epsilon(1e-5));
    REQUIRE(stats_only.stats[1] - 2.0f == 2.0f * (got.stats[1] - 2.0f));
}

// Each row a softmax of random logits.
std::vector<float> random_probs(int rows, int cols, uint32_t seed) {
    auto p = random_vector(static_cast<size_t>(rows) * cols, seed, -3.0f, 3.0f);
    for (int r = 0; r < rows; ++r) {
        double sum = 0;
        for (int c = 0; c < cols; ++c) sum += (p[r * cols + c] = std::exp(p[r * cols + c]));
        for (int c = 0; c < cols; ++c) p[r * cols + c] = static_cast<float>(p[r * cols + c] / sum);
    }
    return p;
}

struct Shape {
    int rows, cols;
};
// Up to 513 blocks of 8 rows: the block sums meet in the stats atomics.
const std::vector<Shape> kShapes{{1, 1}, {1, 7}, {7, 10}, {33, 33}, {1000, 10}, {4097, 3}, {5, 4097}};

}  // namespace

TEST_CASE("softmax_cross_entropy: loss sum, correct count and gradient match the CPU") {
    const float grad_scale = GENERATE(1.0f, 0.125f);
    for (const Shape s : kShapes) {
        INFO(s.rows << " x " << s.cols << " grad_scale " << grad_scale);
        const auto logits = random_vector(static_cast<size_t>(s.rows) * s.cols, 21, -4.0f, 4.0f);
        check_loss(Loss::softmax_cross_entropy, logits, random_labels(s.rows, s.cols, 22), s.cols, grad_scale);
    }
}

TEST_CASE("label smoothing: both crossentropies match the CPU") {
    const float smoothing = GENERATE(0.1f, 0.5f);
    for (const Shape s : kShapes) {
        INFO(s.rows << " x " << s.cols << " smoothing " << smoothing);
        const auto logits = random_vector(static_cast<size_t>(s.rows) * s.cols, 23, -4.0f, 4.0f);
        check_loss(Loss::softmax_cross_entropy, logits, random_labels(s.rows, s.cols, 24), s.cols, 0.125f, smoothing);
        check_loss(Loss::cross_entropy_probs, random_probs(s.rows, s.cols, 33), random_labels(s.rows, s.cols, 34),
                   s.cols, 0.125f, smoothing);
    }
}

TEST_CASE("softmax_cross_entropy with extreme logits and ties matches the CPU") {
    const int cols = 6;
    const std::vector<std::vector<float>> rows{
        {1e4f, -1e4f, 0, 0, 0, 0},          // confident and right
        {1e4f, -1e4f, 0, 0, 0, 0},          // confident and wrong: loss 2e4
        {-1e4f, -1e4f, -1e4f, -1e4f, -1e4f, -1e4f},  // all equal: argmax is column 0
        {-1e30f, 1e30f, 1e30f, 0, 0, 0},    // a tie at the top: the first column wins
        {5, 5, 5, 5, 5, 5},
        {0, 0, 0, 0, 0, 88.0f},             // exp(88) is near float's limit
    };
    const std::vector<int32_t> row_labels{0, 1, 3, 2, 0, 5};
    std::vector<float> logits;
    std::vector<int32_t> labels;
    for (int copy = 0; copy < 40; ++copy) {  // 240 rows: several blocks
        for (size_t r = 0; r < rows.size(); ++r) {
            logits.insert(logits.end(), rows[r].begin(), rows[r].end());
            labels.push_back(row_labels[r]);
        }
    }
    CpuBackend cpu;
    const auto expected = run_loss(cpu, Loss::softmax_cross_entropy, logits, labels, cols, 1.0f, true);
    REQUIRE(std::isfinite(expected.stats[0]));
    for (float g : expected.grad) REQUIRE(std::isfinite(g));
    check_loss(Loss::softmax_cross_entropy, logits, labels, cols, 1.0f);
    check_loss(Loss::softmax_cross_entropy, logits, labels, cols, 1.0f / 240);
}

TEST_CASE("cross_entropy_probs: loss, correct count and gradient match the CPU, clipping included") {
    const float grad_scale = GENERATE(1.0f, 0.125f);
    for (const Shape s : kShapes) {
        INFO(s.rows << " x " << s.cols << " grad_scale " << grad_scale);
        check_loss(Loss::cross_entropy_probs, random_probs(s.rows, s.cols, 31), random_labels(s.rows, s.cols, 32),
                   s.cols, grad_scale);
    }
    // p = 0 and p = 1 are clipped (zero gradient); p below eps too; a four-way tie.
    const std::vector<float> probs{0, 0.5f, 0.5f, 0,   1, 0, 0, 0,   1e-9f, 0.5f, 0.5f, 0,   0.25f, 0.25f, 0.25f, 0.25f};
    check_loss(Loss::cross_entropy_probs, probs, {0, 0, 0, 2}, 4, grad_scale);
}

TEST_CASE("mean_squared_error: loss, correct count and gradient match the CPU") {
    const float grad_scale = GENERATE(1.0f, 0.125f);
    for (const Shape s : kShapes) {
        INFO(s.rows << " x " << s.cols << " grad_scale " << grad_scale);
        const auto y = random_vector(static_cast<size_t>(s.rows) * s.cols, 41, -0.5f, 1.5f);
        check_loss(Loss::mean_squared_error, y, random_labels(s.rows, s.cols, 42), s.cols, grad_scale);
    }
}

TEST_CASE("A NaN in a row counts as the CPU counts it: passed over past column 0, the winner in column 0") {
    // cross_entropy_probs' loss reads only the label's column, so it stays
    // finite while the count of correct rows depends on how the argmax treats NaN.
    const int cols = 64;  // two columns per lane: a lane meets its NaN first or second
    std::vector<float> probs;
    std::vector<int32_t> labels;
    for (int r = 0; r < 96; ++r) {
        std::vector<float> row(cols, 0.001f);
        row[r % 7 + 2] = 0.5f;                                      // the label's column
        row[33 + r % 30] = r % 3 == 0 ? 0.9f : 0.1f;                // larger than the label in a third of the rows
        row[r % 4 == 0 ? 0 : 10 + r % 5] = std::nanf("");           // column 0 in a quarter of the rows
        probs.insert(probs.end(), row.begin(), row.end());
        labels.push_back(r % 7 + 2);
    }
    CpuBackend cpu;
    CudaBackend gpu(0);
    const LossResult expected = run_loss(cpu, Loss::cross_entropy_probs, probs, labels, cols, 1.0f, false);
    const LossResult got = run_loss(gpu, Loss::cross_entropy_probs, probs, labels, cols, 1.0f, false);
    REQUIRE(std::isfinite(expected.stats[0]));
    CHECK(got.stats[0] == Approx(expected.stats[0]).epsilon(1e-5));
    // Stats start at 2 correct. Rows with NaN in column 0 are never correct
    // (24); of the other 72, the 24 with a larger column are wrong.
    CHECK(expected.stats[1] == 2.0f + 48.0f);
    CHECK(got.stats[1] == expected.stats[1]);
}

TEST_CASE("regression_loss: loss sum, metric sum and gradient match the CPU for mse, mae and huber") {
    using gputrain::math::RegressionLoss;
    using gputrain::math::RegressionMetric;
    const int rows = 77, cols = 37;  // more columns than a warp's lanes
    const auto y = random_vector(static_cast<size_t>(rows) * cols, 41, -3.0f, 3.0f);
    const auto t = random_vector(static_cast<size_t>(rows) * cols, 42, -3.0f, 3.0f);
    for (const auto kind : {RegressionLoss::mean_squared_error, RegressionLoss::mean_absolute_error, RegressionLoss::huber}) {
        for (const auto metric : {RegressionMetric::mae, RegressionMetric::mse}) {
            CpuBackend cpu;
            CudaBackend gpu(0);
            std::vector<std::vector<float>> stats, grads;
            for (Backend* be : {static_cast<Backend*>(&cpu), static_cast<Backend*>(&gpu)}) {
                Buffers buf(*be);
                const float* dy = buf.upload(y);
                const float* dt = buf.upload(t);
                float* grad = buf.upload(std::vector<float>(y.size(), 99.0f));
                float* s = buf.upload(std::vector<float>{1.5f, 2.0f});
                be->regression_loss(dy, dt, rows, cols, kind, 0.7f, metric, 0.125f, grad, s);
                stats.push_back(buf.download(s, 2));
                grads.push_back(buf.download(grad, y.size()));
            }
            INFO("kind " << static_cast<int>(kind) << " metric " << static_cast<int>(metric));
            REQUIRE(stats[1][0] == Approx(stats[0][0]).epsilon(1e-5));
            REQUIRE(stats[1][1] == Approx(stats[0][1]).epsilon(1e-5));
            require_close(grads[1], grads[0], 1e-6, 1e-7);
        }
    }
}
