// layer_norm and rms_norm: the forward pass against a double reference
// written here, PyTorch's numbers for a small case (the biased variance),
// gradients (x, gamma, beta) against finite differences, accuracy on rows of
// many columns around a large mean, and the keys' defaults and error texts.
#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/sizing_backend.hpp"
#include "backend/ops/normalization.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "layer_harness.hpp"
#include "model_specs.hpp"
#include "nn/layer_norm.hpp"
#include "nn/model.hpp"
#include "nn/registry.hpp"
#include "nn/resolve_layers.hpp"

using namespace gputrain;
using harness::LayerUnderTest;

namespace {

nn::LayerNormSettings ln(bool center = true, bool scale = true, double epsilon = 1e-5) {
    nn::LayerNormSettings s;
    s.center = center;
    s.scale = scale;
    s.epsilon = epsilon;
    return s;
}

nn::LayerNormSettings rms(double epsilon = 1e-6) {
    nn::LayerNormSettings s;
    s.rms = true;
    s.center = false;
    s.epsilon = epsilon;
    return s;
}

// The layer's output in double: every run of C consecutive values normalized
// on its own (biased variance; rms: around 0), then * gamma + beta.
std::vector<double> reference(const std::vector<float>& x, int C, const nn::LayerNormSettings& s,
                              const float* gamma, const float* beta) {
    std::vector<double> y(x.size());
    for (size_t row = 0; row < x.size() / C; ++row) {
        const float* v = x.data() + row * C;
        double mean = 0;
        if (!s.rms) {
            for (int c = 0; c < C; ++c) mean += v[c];
            mean /= C;
        }
        double var = 0;
        for (int c = 0; c < C; ++c) var += (v[c] - mean) * (v[c] - mean);
        var /= C;
        for (int c = 0; c < C; ++c) {
            const double xhat = (v[c] - mean) / std::sqrt(var + s.epsilon);
            y[row * C + c] = xhat * (gamma ? gamma[c] : 1.0) + (beta ? beta[c] : 0.0);
        }
    }
    return y;
}

// The layer's gamma and beta in the harness (null where it has none).
const float* param_named(LayerUnderTest& t, const std::string& name) {
    const auto specs = t.layer->param_specs();
    for (size_t i = 0; i < specs.size(); ++i)
        if (specs[i].name == name) return t.params[i].data();
    return nullptr;
}

std::string create_error(const config::LayerSpec& spec) {
    try {
        nn::builtin_layers().create(spec, 0);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("layer_norm and rms_norm forward match a double reference", "[layer_norm]") {
    struct Case {
        nn::LayerNormSettings s;
        const char* what;
    };
    for (const Case& c : {Case{ln(true, true), "layer_norm"}, Case{ln(false, true), "layer_norm, no center"},
                          Case{ln(true, false), "layer_norm, no scale"},
                          Case{ln(false, false), "layer_norm, neither"}, Case{rms(), "rms_norm"},
                          Case{rms(1e-2), "rms_norm, epsilon 0.01"}}) {
        for (const Shape& in : {Shape{7}, Shape{5, 16}}) {
            INFO(c.what << ", input " << shape_to_string(in, false));
            const int rows = 3, C = static_cast<int>(in.back());
            LayerUnderTest t(std::make_unique<nn::LayerNorm>(c.s), in, rows);
            REQUIRE(t.out_shape == in);
            REQUIRE(t.layer->type() == (c.s.rms ? "rms_norm" : "layer_norm"));
            const auto x = harness::random_vector(t.in_size(), 11, -2.0f, 3.0f);
            std::vector<float> y(t.out_size());
            nn::RunContext ctx{t.backend, true};
            t.layer->forward(ctx, x.data(), y.data(), rows);
            const auto expected = reference(x, C, c.s, param_named(t, "gamma"), param_named(t, "beta"));
            for (size_t i = 0; i < y.size(); ++i) {
                INFO("element " << i);
                REQUIRE(y[i] == Approx(expected[i]).margin(2e-6));
            }
            // Evaluation normalizes the same way: no moving statistics.
            std::vector<float> y_eval(t.out_size());
            nn::RunContext eval{t.backend, false};
            t.layer->forward(eval, x.data(), y_eval.data(), rows);
            REQUIRE(y_eval == y);
        }
    }
}

TEST_CASE("layer_norm and rms_norm give PyTorch's numbers for x = [1, 2, 3, 4]", "[layer_norm]") {
    // torch.nn.functional.layer_norm(torch.tensor([1., 2., 3., 4.]), (4,), eps=1e-5):
    //   mean 2.5, biased variance ((1.5^2 + 0.5^2) * 2) / 4 = 1.25,
    //   rstd = 1 / sqrt(1.25 + 1e-5) = 0.8944236133,
    //   y = [-1.5, -0.5, 0.5, 1.5] * rstd = [-1.3416354, -0.4472118, 0.4472118, 1.3416354]
    // (the unbiased variance 5/3 would give [-1.1618915, -0.3872972, ...]).
    const std::vector<float> x{1, 2, 3, 4};
    {
        LayerUnderTest t(std::make_unique<nn::LayerNorm>(ln()), {4}, 1);
        t.params[0] = {1, 1, 1, 1};  // Init::ones
        t.params[1] = {0, 0, 0, 0};  // Init::zeros
        std::vector<float> y(4);
        nn::RunContext ctx{t.backend, true};
        t.layer->forward(ctx, x.data(), y.data(), 1);
        const std::vector<double> torch{-1.3416354199689269, -0.447211806656309, 0.447211806656309,
                                        1.3416354199689269};
        for (size_t i = 0; i < 4; ++i) REQUIRE(y[i] == Approx(torch[i]).margin(1e-6));
        // With gamma [1, 2, 0.5, -1] and beta [0, 0.5, 1, 0]: y * gamma + beta.
        t.params[0] = {1, 2, 0.5f, -1};
        t.params[1] = {0, 0.5f, 1, 0};
        t.layer->forward(ctx, x.data(), y.data(), 1);
        const std::vector<double> affine{-1.3416354199689269, -0.394423613312618, 1.2236059033281545,
                                         -1.3416354199689269};
        for (size_t i = 0; i < 4; ++i) REQUIRE(y[i] == Approx(affine[i]).margin(1e-6));
    }
    // torch.nn.RMSNorm(4, eps=1e-6)(torch.tensor([1., 2., 3., 4.])):
    //   mean(x^2) = (1 + 4 + 9 + 16) / 4 = 7.5, rstd = 1 / sqrt(7.5 + 1e-6) = 0.3651483473,
    //   y = x * rstd = [0.3651483, 0.7302967, 1.0954450, 1.4605934]
    {
        LayerUnderTest t(std::make_unique<nn::LayerNorm>(rms()), {4}, 1);
        REQUIRE(t.params.size() == 1);
        t.params[0] = {1, 1, 1, 1};
        std::vector<float> y(4);
        nn::RunContext ctx{t.backend, true};
        t.layer->forward(ctx, x.data(), y.data(), 1);
        const std::vector<double> torch{0.3651483473268884, 0.7302966946537768, 1.0954450419806652,
                                        1.4605933893075536};
        for (size_t i = 0; i < 4; ++i) REQUIRE(y[i] == Approx(torch[i]).margin(1e-6));
    }
}

TEST_CASE("layer_norm and rms_norm gradients (x, gamma, beta) match finite differences", "[layer_norm]") {
    struct Case {
        nn::LayerNormSettings s;
        Shape in;
        int rows;
    };
    for (const Case& c : {Case{ln(), {7}, 3}, Case{ln(), {5, 16}, 2}, Case{ln(false, true), {2, 3, 4}, 2},
                          Case{ln(true, false), {6}, 4}, Case{ln(false, false), {3, 5}, 2},
                          Case{ln(true, true, 0.1), {4}, 5}, Case{rms(), {7}, 3}, Case{rms(), {5, 16}, 2},
                          Case{rms(0.1), {2, 3, 4}, 2}}) {
        INFO((c.s.rms ? "rms_norm" : "layer_norm") << " input " << shape_to_string(c.in, false) << " rows " << c.rows
                                                   << " center " << c.s.center << " scale " << c.s.scale
                                                   << " epsilon " << c.s.epsilon);
        LayerUnderTest t(std::make_unique<nn::LayerNorm>(c.s), c.in, c.rows);
        nn::RunContext ctx{t.backend, true};
        harness::gradient_check(t, ctx);
    }
}

TEST_CASE("layer_norm backward overwrites its gradients and works without dx", "[layer_norm]") {
    for (const bool is_rms : {false, true}) {
        INFO("rms " << is_rms);
        LayerUnderTest t(std::make_unique<nn::LayerNorm>(is_rms ? rms() : ln()), {3, 8}, 2);
        const auto x = harness::random_vector(t.in_size(), 21);
        const auto dy = harness::random_vector(t.out_size(), 22);
        std::vector<float> y(t.out_size()), dx(t.in_size()), dx_again(t.in_size());
        nn::RunContext ctx{t.backend, true};
        t.layer->forward(ctx, x.data(), y.data(), t.rows);
        t.layer->backward(ctx, x.data(), y.data(), dy.data(), dx.data(), t.rows);
        const auto first = t.grads;
        t.layer->backward(ctx, x.data(), y.data(), dy.data(), dx_again.data(), t.rows);
        REQUIRE(t.grads == first);
        REQUIRE(dx_again == dx);
        for (auto& g : t.grads) std::fill(g.begin(), g.end(), 42.0f);
        t.layer->backward(ctx, x.data(), y.data(), dy.data(), nullptr, t.rows);
        REQUIRE(t.grads == first);
        // dbeta is the column sum of dy over all 2 * 3 rows of the shard.
        if (!is_rms)
            for (int c = 0; c < 8; ++c) {
                double s = 0;
                for (int r = 0; r < 6; ++r) s += dy[static_cast<size_t>(r * 8 + c)];
                REQUIRE(t.grads[1][static_cast<size_t>(c)] == Approx(s).margin(1e-6));
            }
    }
}

TEST_CASE("layer_norm is accurate on rows of many columns around a large mean", "[layer_norm]") {
    // 4096 values 1000 + [-0.5, 0.5): E[x^2] - E[x]^2 in float would lose
    // every digit of the variance (~1/12); two passes in double keep them.
    const int C = 4096;
    for (const bool is_rms : {false, true}) {
        INFO("rms " << is_rms);
        const auto s = is_rms ? rms() : ln();
        LayerUnderTest t(std::make_unique<nn::LayerNorm>(s), {C}, 2);
        auto x = harness::random_vector(t.in_size(), 31, -0.5f, 0.5f);
        for (auto& v : x) v += 1000.0f;
        std::vector<float> y(t.out_size());
        nn::RunContext ctx{t.backend, true};
        t.layer->forward(ctx, x.data(), y.data(), t.rows);
        const auto expected = reference(x, C, s, param_named(t, "gamma"), param_named(t, "beta"));
        // x - mean is exact in float here to ~6e-5 (the spacing of floats near
        // 1000), which after dividing by the std (~0.29) is ~2e-4 of xhat.
        for (size_t i = 0; i < y.size(); ++i) {
            INFO("element " << i);
            REQUIRE(y[i] == Approx(expected[i]).margin(is_rms ? 1e-5 : 3e-4));
        }
    }
}

TEST_CASE("layer_norm and rms_norm parameters: order, shapes, initializers and defaults", "[layer_norm]") {
    {
        nn::LayerNorm layer(ln());
        REQUIRE(layer.build(Shape{5, 16}) == Shape{5, 16});
        const auto specs = layer.param_specs();
        REQUIRE(specs.size() == 2);
        REQUIRE(specs[0].name == "gamma");
        REQUIRE(specs[0].shape == Shape{16});
        REQUIRE(specs[0].init == nn::Init::ones);
        REQUIRE(specs[1].name == "beta");
        REQUIRE(specs[1].shape == Shape{16});
        REQUIRE(specs[1].init == nn::Init::zeros);
        REQUIRE(layer.scratch_per_sample() == 2 * 5);
    }
    {
        nn::LayerNorm layer(rms());
        layer.build(Shape{5, 16});
        const auto specs = layer.param_specs();
        REQUIRE(specs.size() == 1);
        REQUIRE(specs[0].name == "gamma");
        REQUIRE(specs[0].init == nn::Init::ones);
        REQUIRE(layer.scratch_per_sample() == 5);
    }
    REQUIRE(nn::LayerNorm(ln(false, true)).param_specs().size() == 1);
    REQUIRE(nn::LayerNorm(ln(true, false)).param_specs()[0].name == "beta");
    REQUIRE(nn::LayerNorm(ln(false, false)).param_specs().empty());

    // From the registry: defaults (PyTorch's 1e-5 for layer_norm, Keras' 1e-6 for rms_norm).
    const auto made = nn::builtin_layers().create(specs::layer("layer_norm"), 0);
    const auto& l = dynamic_cast<const nn::LayerNorm&>(*made);
    REQUIRE(l.settings().epsilon == 1e-5);
    REQUIRE(l.settings().center);
    REQUIRE(l.settings().scale);
    REQUIRE_FALSE(l.settings().rms);
    const auto made_rms = nn::builtin_layers().create(specs::layer("rms_norm", {{"epsilon", "0.001"}}), 0);
    const auto& r = dynamic_cast<const nn::LayerNorm&>(*made_rms);
    REQUIRE(r.type() == "rms_norm");
    REQUIRE(r.settings().rms);
    REQUIRE(r.settings().epsilon == 0.001);
    REQUIRE(dynamic_cast<const nn::LayerNorm&>(*nn::builtin_layers().create(specs::layer("rms_norm"), 0))
                .settings()
                .epsilon == 1e-6);
    const auto plain =
        nn::builtin_layers().create(specs::layer("layer_norm", {{"center", "false"}, {"scale", "no"}}), 0);
    REQUIRE(dynamic_cast<const nn::LayerNorm&>(*plain).settings().center == false);
    REQUIRE(dynamic_cast<const nn::LayerNorm&>(*plain).settings().scale == false);
}

TEST_CASE("layer_norm and rms_norm in a model: the model's gradients match finite differences", "[layer_norm]") {
    config::ModelConfig mc;
    mc.input_shape = {3, 6};
    mc.layers = {specs::layer("layer_norm"), specs::layer("dense", {{"units", "5"}, {"activation", "tanh"}}),
                 specs::layer("rms_norm"), specs::layer("flatten"),
                 specs::layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    config::LossConfig loss;
    loss.name = config::LossKind::sparse_categorical_crossentropy;
    {
        SizingBackend sizing;
        REQUIRE_NOTHROW(nn::Model(mc, loss, sizing, 4, 1));
    }
    CpuBackend be;
    const int rows = 4;
    nn::Model model(mc, loss, be, rows, 11);
    const auto x = harness::random_vector(static_cast<size_t>(rows * 18), 5, -1.0f, 2.0f);
    const std::vector<int32_t> labels{0, 2, 1, 2};
    const auto total_loss = [&] {
        float stats[2] = {0, 0};
        nn::RunContext ctx{be, false};
        model.evaluate(ctx, x.data(), labels.data(), rows, stats);
        return static_cast<double>(stats[0]);
    };
    float stats[2] = {0, 0};
    nn::RunContext ctx{be, true};
    model.forward_backward(ctx, x.data(), labels.data(), rows, 1.0f, stats);
    REQUIRE(stats[0] == Approx(total_loss()).epsilon(1e-5));
    const std::vector<float> analytic(model.grad_data(), model.grad_data() + model.param_count());
    float* p = model.param_data();
    const float h = 1e-3f;
    for (size_t i = 0; i < model.param_count(); ++i) {
        const float keep = p[i];
        p[i] = keep + h;
        const double up = total_loss();
        p[i] = keep - h;
        const double down = total_loss();
        p[i] = keep;
        harness::check_close(analytic[i], (up - down) / (2 * h), "param", i);
    }
}

TEST_CASE("layer_norm and rms_norm resolve with their defaults, and the resolved YAML resolves to itself",
          "[layer_norm]") {
    const auto resolve = [](const std::string& yaml) {
        config::RunConfig cfg = config::load_from_string(yaml, "cfg.yaml");
        nn::resolve_layers(cfg);
        return cfg;
    };
    const auto first = resolve(
        "model: {input_shape: [5, 16], layers: [{type: layer_norm}, {type: rms_norm}, "
        "{type: layer_norm, epsilon: 0.001, center: false}, {type: rms_norm, epsilon: 1e-5}, {type: flatten}, "
        "{type: dense, units: 3}]}\ndata: {dataset: synthetic}\n");
    const std::string& y = first.resolved_yaml;
    INFO(y);
    CHECK(y.find("{type: layer_norm, name: layer_norm, epsilon: 1e-05, center: true, scale: true}") !=
          std::string::npos);
    CHECK(y.find("{type: rms_norm, name: rms_norm, epsilon: 1e-06}") != std::string::npos);
    CHECK(y.find("{type: layer_norm, name: layer_norm_1, epsilon: 0.001, center: false, scale: true}") !=
          std::string::npos);
    CHECK(y.find("{type: rms_norm, name: rms_norm_1, epsilon: 1e-05}") != std::string::npos);
    config::RunConfig twice = config::load_from_string(y, "config.yaml");
    nn::resolve_layers(twice);
    CHECK(twice.resolved_yaml == y);
    CHECK(twice.digest == first.digest);
}

TEST_CASE("layer_norm and rms_norm error texts", "[layer_norm]") {
    using specs::layer;
    REQUIRE(create_error(layer("layer_norm", {{"epsilon", "0"}})) ==
            "test.yaml:3:17: model.layers[0] (layer_norm): epsilon: must be positive (e.g. epsilon: 1e-5)");
    REQUIRE(create_error(layer("rms_norm", {{"epsilon", "0"}})) ==
            "test.yaml:3:17: model.layers[0] (rms_norm): epsilon: must be positive (e.g. epsilon: 1e-6)");
    REQUIRE(create_error(layer("layer_norm", {{"epsilon", "-1e-5"}})) ==
            "test.yaml:3:17: model.layers[0] (layer_norm): epsilon: must be in [0.0, 1.0), got -1e-5");
    REQUIRE(create_error(layer("layer_norm", {{"epsilon", "1e-50"}})) ==
            "test.yaml:3:17: model.layers[0] (layer_norm): epsilon: is 0 in float32 (below 1.4e-45); give at least "
            "1e-38, e.g. epsilon: 1e-5");
    REQUIRE(create_error(layer("layer_norm", {{"epsilon", "small"}})) ==
            "test.yaml:3:17: model.layers[0] (layer_norm): epsilon: expected a number, got 'small'");
    REQUIRE(create_error(layer("layer_norm", {{"centre", "true"}})) ==
            "test.yaml:3:16: model.layers[0] (layer_norm): centre: unknown parameter for layer_norm (did you mean "
            "'center'?); it takes: epsilon, center, scale, trainable, lr_multiplier");
    REQUIRE(create_error(layer("rms_norm", {{"center", "true"}})) ==
            "test.yaml:3:16: model.layers[0] (rms_norm): center: unknown parameter for rms_norm; it takes: epsilon, trainable, lr_multiplier");
    REQUIRE(create_error(layer("layer_norm", {{"scale", "maybe"}})) ==
            "test.yaml:3:15: model.layers[0] (layer_norm): scale: expected true or false, got 'maybe'");

    nn::LayerNorm layer_norm(ln());
    layer_norm.set_name("ln");
    try {
        layer_norm.build(Shape{});
        FAIL("no error for an input without axes");
    } catch (const ConfigError& e) {
        REQUIRE(std::string(e.what()) == "layer 'ln' (layer_norm): input has no axes; give model.input_shape");
    }
}

TEST_CASE("LayerNormBackward: each output on its own is what the call with all three gives; none at all is a no-op",
          "[layer_norm]") {
    CpuBackend be;
    const int rows = 5, cols = 19;
    const auto x = harness::random_vector(rows * cols, 3, -2.0f, 2.0f);
    const auto dy = harness::random_vector(rows * cols, 4, -1.0f, 1.0f);
    const auto gamma = harness::random_vector(cols, 5, 0.5f, 1.5f);
    std::vector<float> y(rows * cols), mean(rows), rstd(rows);
    run_op(be, ops::LayerNormForward{x.data(), gamma.data(), nullptr, y.data(), mean.data(), rstd.data(), rows, cols,
                                     1e-5f, false});
    std::vector<float> dx(rows * cols), dgamma(cols), dbeta(cols);
    const auto backward = [&](float* dx_out, float* dgamma_out, float* dbeta_out) {
        run_op(be, ops::LayerNormBackward{x.data(), dy.data(), mean.data(), rstd.data(), gamma.data(), dx_out,
                                          dgamma_out, dbeta_out, rows, cols, false, nullptr, 0});
    };
    backward(dx.data(), dgamma.data(), dbeta.data());
    std::vector<float> only_dx(rows * cols), only_dgamma(cols), only_dbeta(cols);
    backward(only_dx.data(), nullptr, nullptr);
    backward(nullptr, only_dgamma.data(), nullptr);
    backward(nullptr, nullptr, only_dbeta.data());
    backward(nullptr, nullptr, nullptr);
    REQUIRE(only_dx == dx);
    REQUIRE(only_dgamma == dgamma);
    REQUIRE(only_dbeta == dbeta);
}
