// batch_norm: gradients in training mode (x, gamma, beta) against finite
// differences, the moving statistics after two steps against a hand
// computation, evaluation on the moving statistics, and the collectives a
// synchronized layer makes (the same with and without rows).
#include "layer_harness.hpp"
#include "nn/batch_norm.hpp"

using namespace gputrain;
using harness::LayerUnderTest;

namespace {

nn::BatchNormSettings bn(bool center = true, bool scale = true, bool sync = false) {
    nn::BatchNormSettings s;
    s.center = center;
    s.scale = scale;
    s.sync = sync;
    return s;
}

// Per channel of a [rows, C] matrix: mean, biased variance, unbiased variance (double).
struct Moments {
    std::vector<double> mean, var, unbiased;
};
Moments moments(const std::vector<float>& x, int rows, int C) {
    Moments m{std::vector<double>(C), std::vector<double>(C), std::vector<double>(C)};
    for (int c = 0; c < C; ++c) {
        double s = 0;
        for (int r = 0; r < rows; ++r) s += x[static_cast<size_t>(r * C + c)];
        m.mean[c] = s / rows;
        double q = 0;
        for (int r = 0; r < rows; ++r) q += std::pow(x[static_cast<size_t>(r * C + c)] - m.mean[c], 2);
        m.var[c] = q / rows;
        m.unbiased[c] = q / (rows - 1);
    }
    return m;
}

// Records the collectives a layer makes; sums nothing (one replica).
struct CallLog : nn::CrossReplica {
    std::vector<size_t> counts;
    void allreduce_sum(float*, size_t count) override { counts.push_back(count); }
};

}  // namespace

TEST_CASE("batch_norm gradients (x, gamma, beta) match finite differences in training mode") {
    struct Case {
        Shape in;
        int rows;
        bool center, scale;
    };
    for (const Case& c : {Case{{3, 5, 4}, 2, true, true}, Case{{7}, 5, true, true}, Case{{2, 3, 3}, 3, false, true},
                          Case{{5}, 4, true, false}, Case{{1, 1, 2}, 3, false, false}}) {
        INFO("input " << shape_to_string(c.in, false) << " rows " << c.rows << " center " << c.center << " scale "
                      << c.scale);
        LayerUnderTest t(std::make_unique<nn::BatchNorm>(bn(c.center, c.scale)), c.in, c.rows);
        REQUIRE(t.out_shape == c.in);
        nn::RunContext ctx{t.backend, true};
        harness::gradient_check(t, ctx);
    }
}

TEST_CASE("batch_norm normalizes with the batch statistics and moves the moving ones (two steps by hand)") {
    const int rows = 3, C = 2;
    const Shape in{2, C};  // 2 pixels per sample: statistics over rows * 2 = 6 values per channel
    LayerUnderTest t(std::make_unique<nn::BatchNorm>(bn()), in, rows);
    auto specs = t.layer->param_specs();
    REQUIRE(specs.size() == 4);
    REQUIRE(specs[2].name == "moving_mean");
    REQUIRE_FALSE(specs[2].trainable);
    REQUIRE(specs[3].name == "moving_variance");
    REQUIRE(specs[3].init == nn::Init::ones);
    auto& gamma = t.params[0];
    auto& beta = t.params[1];
    auto& moving_mean = t.params[2];
    auto& moving_var = t.params[3];
    gamma = {1.5f, -0.5f};
    beta = {0.25f, 2.0f};
    moving_mean = {0.0f, 0.0f};  // Keras' initial state
    moving_var = {1.0f, 1.0f};

    nn::RunContext ctx{t.backend, true};
    std::vector<double> expect_mean{0, 0}, expect_var{1, 1};
    for (uint64_t step = 0; step < 2; ++step) {
        const auto x = harness::random_vector(t.in_size(), 60 + step, -2.0f, 3.0f);
        std::vector<float> y(t.out_size());
        t.layer->forward(ctx, x.data(), y.data(), rows);
        const Moments m = moments(x, rows * 2, C);
        for (int c = 0; c < C; ++c) {
            expect_mean[c] = 0.99 * expect_mean[c] + 0.01 * m.mean[c];
            expect_var[c] = 0.99 * expect_var[c] + 0.01 * m.unbiased[c];
            for (int r = 0; r < rows * 2; ++r) {
                const double xhat = (x[static_cast<size_t>(r * C + c)] - m.mean[c]) / std::sqrt(m.var[c] + 0.001);
                REQUIRE(y[static_cast<size_t>(r * C + c)] == Approx(gamma[c] * xhat + beta[c]).margin(1e-5));
            }
        }
    }
    for (int c = 0; c < C; ++c) {
        REQUIRE(moving_mean[c] == Approx(expect_mean[c]).epsilon(1e-5));
        REQUIRE(moving_var[c] == Approx(expect_var[c]).epsilon(1e-5));
    }
}

TEST_CASE("batch_norm in evaluation uses the moving statistics and leaves them alone") {
    for (bool affine : {true, false}) {
        INFO("center and scale " << affine);
        const int rows = 4, C = 3;
        LayerUnderTest t(std::make_unique<nn::BatchNorm>(bn(affine, affine)), {C}, rows);
        const size_t first_state = affine ? 2 : 0;
        t.params[first_state] = {0.5f, -1.0f, 2.0f};
        t.params[first_state + 1] = {4.0f, 0.25f, 1.0f};
        if (affine) {
            t.params[0] = {2.0f, 1.0f, -1.0f};
            t.params[1] = {0.0f, 0.5f, 3.0f};
        }
        const auto kept = t.params;
        const auto x = harness::random_vector(t.in_size(), 70);
        std::vector<float> y(t.out_size());
        nn::RunContext ctx{t.backend, false};
        t.layer->forward(ctx, x.data(), y.data(), rows);
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < C; ++c) {
                const double g = affine ? t.params[0][c] : 1.0, b = affine ? t.params[1][c] : 0.0;
                const double expected = g * (x[static_cast<size_t>(r * C + c)] - t.params[first_state][c]) /
                                            std::sqrt(t.params[first_state + 1][c] + 0.001) +
                                        b;
                REQUIRE(y[static_cast<size_t>(r * C + c)] == Approx(expected).margin(1e-5));
            }
        REQUIRE(t.params == kept);
    }
}

TEST_CASE("sync batch_norm makes the same collectives with and without rows; plain batch_norm makes none") {
    const int C = 3;
    for (bool sync : {true, false}) {
        INFO("sync " << sync);
        LayerUnderTest t(std::make_unique<nn::BatchNorm>(bn(true, true, sync)), {2, C}, 2);
        CallLog with_rows, without_rows;
        nn::RunContext ctx{t.backend, true};
        ctx.cross_replica = &with_rows;
        const auto x = harness::random_vector(t.in_size(), 80);
        std::vector<float> y(t.out_size()), dx(t.in_size());
        t.layer->forward(ctx, x.data(), y.data(), 2);
        t.layer->backward(ctx, x.data(), y.data(), x.data(), dx.data(), 2);
        ctx.cross_replica = &without_rows;
        t.layer->forward_without_rows(ctx);
        t.layer->backward_without_rows(ctx);
        REQUIRE(with_rows.counts == without_rows.counts);
        if (sync) REQUIRE(with_rows.counts == std::vector<size_t>{2 * C + 1, 2 * C});
        else REQUIRE(with_rows.counts.empty());
        // Evaluation never reduces: replicas evaluate different numbers of batches.
        CallLog eval;
        nn::RunContext infer{t.backend, false};
        infer.cross_replica = &eval;
        t.layer->forward(infer, x.data(), y.data(), 2);
        REQUIRE(eval.counts.empty());
    }
}
