// causal_self_attention: forward against a naive reference, finite
// differences of every gradient, generation through the key/value cache
// against the full forward, and its error texts.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "backend/cpu/sizing_backend.hpp"
#include "core/error.hpp"
#include "layer_harness.hpp"
#include "model_specs.hpp"
#include "nn/attention.hpp"
#include "nn/model.hpp"
#include "nn/registry.hpp"

using namespace gputrain;

namespace {

std::unique_ptr<nn::Layer> attention(int64_t heads, bool use_bias, int64_t length = 0) {
    auto layer = std::make_unique<nn::CausalSelfAttention>(heads, use_bias, length);
    layer->set_name("attn");
    return layer;
}

// y for every sample of x (rows x T x C), in double with triple loops, from the
// layer's parameters as the harness drew them.
std::vector<double> reference(const harness::LayerUnderTest& t, const std::vector<float>& x, int T, int C, int heads,
                              bool use_bias) {
    const int D = C / heads;
    const auto& wqkv = t.params[0];
    const std::vector<float>* bqkv = use_bias ? &t.params[1] : nullptr;
    const auto& wout = t.params[use_bias ? 2 : 1];
    const std::vector<float>* bout = use_bias ? &t.params[3] : nullptr;
    std::vector<double> y(static_cast<size_t>(t.rows) * T * C);
    for (int n = 0; n < t.rows; ++n) {
        const float* xs = x.data() + static_cast<size_t>(n) * T * C;
        std::vector<double> qkv(static_cast<size_t>(T) * 3 * C), o(static_cast<size_t>(T) * C);
        for (int i = 0; i < T; ++i)
            for (int j = 0; j < 3 * C; ++j) {
                double s = bqkv ? (*bqkv)[j] : 0.0;
                for (int c = 0; c < C; ++c) s += static_cast<double>(xs[i * C + c]) * wqkv[c * 3 * C + j];
                qkv[i * 3 * C + j] = s;
            }
        for (int h = 0; h < heads; ++h)
            for (int i = 0; i < T; ++i) {
                std::vector<double> p(static_cast<size_t>(i) + 1);
                double mx = -1e300;
                for (int j = 0; j <= i; ++j) {
                    double s = 0;
                    for (int d = 0; d < D; ++d) s += qkv[i * 3 * C + h * D + d] * qkv[j * 3 * C + C + h * D + d];
                    p[j] = s / std::sqrt(static_cast<double>(D));
                    mx = std::max(mx, p[j]);
                }
                double sum = 0;
                for (auto& e : p) sum += (e = std::exp(e - mx));
                for (int d = 0; d < D; ++d) {
                    double s = 0;
                    for (int j = 0; j <= i; ++j) s += p[j] / sum * qkv[j * 3 * C + 2 * C + h * D + d];
                    o[i * C + h * D + d] = s;
                }
            }
        for (int i = 0; i < T; ++i)
            for (int j = 0; j < C; ++j) {
                double s = bout ? (*bout)[j] : 0.0;
                for (int c = 0; c < C; ++c) s += o[i * C + c] * wout[c * C + j];
                y[(static_cast<size_t>(n) * T + i) * C + j] = s;
            }
    }
    return y;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
    return m;
}

std::string message_of(Shape input, std::vector<config::LayerSpec> layers) {
    SizingBackend be;
    config::ModelConfig mc;
    mc.input_shape = std::move(input);
    mc.layers = std::move(layers);
    config::LossConfig loss;
    try {
        nn::Model m(mc, loss, be, 1, 1);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("causal_self_attention forward matches a naive causal reference", "[attention]") {
    struct Case {
        int T, C, heads, rows;
    };
    // T 70: more query rows than the CPU kernels' block of 64.
    const Case c = GENERATE(Case{5, 8, 2, 3}, Case{1, 8, 2, 2}, Case{70, 8, 4, 2});
    const bool use_bias = GENERATE(true, false);
    INFO("T " << c.T << " C " << c.C << " heads " << c.heads << " bias " << use_bias);
    harness::LayerUnderTest t(attention(c.heads, use_bias), {c.T, c.C}, c.rows);
    REQUIRE(t.out_shape == Shape{c.T, c.C});
    const auto specs = t.layer->param_specs();
    REQUIRE(specs.size() == (use_bias ? 4u : 2u));
    REQUIRE(specs[0].name == "qkv_kernel");
    REQUIRE(specs[0].shape == Shape{c.C, 3 * c.C});
    REQUIRE(specs.back().name == (use_bias ? "out_bias" : "out_kernel"));
    const auto x = harness::random_vector(t.in_size(), 3);
    std::vector<float> y(t.out_size());
    nn::RunContext ctx{t.backend};
    t.layer->forward(ctx, x.data(), y.data(), t.rows);
    REQUIRE(max_abs_diff(y, reference(t, x, c.T, c.C, c.heads, use_bias)) < 1e-5);
}

TEST_CASE("causal_self_attention gradients match finite differences", "[attention]") {
    struct Case {
        int T, C, heads, rows;
        bool use_bias;
    };
    const Case c = GENERATE(Case{7, 8, 2, 2, true}, Case{7, 8, 4, 1, true}, Case{1, 4, 1, 2, true},
                            Case{7, 6, 1, 1, false}, Case{70, 4, 2, 1, true});
    INFO("T " << c.T << " C " << c.C << " heads " << c.heads << " rows " << c.rows << " bias " << c.use_bias);
    harness::LayerUnderTest t(attention(c.heads, c.use_bias), {c.T, c.C}, c.rows, 11);
    nn::RunContext ctx{t.backend};
    ctx.training = true;
    harness::gradient_check(t, ctx);
}

TEST_CASE("causal_self_attention generates position by position as the full causal forward", "[attention]") {
    const int T = 6, C = 8, heads = 2, rows = 3;
    harness::LayerUnderTest full(attention(heads, true), {T, C}, rows, 5);
    harness::LayerUnderTest gen(attention(heads, true, T), {1, C}, rows, 99);
    REQUIRE(static_cast<nn::CausalSelfAttention&>(*gen.layer).generates());
    REQUIRE_FALSE(static_cast<nn::CausalSelfAttention&>(*full.layer).generates());
    REQUIRE(gen.layer->scratch_per_sample() == 2 * T * C + 3 * C + C + heads);
    for (size_t i = 0; i < full.params.size(); ++i) std::copy(full.params[i].begin(), full.params[i].end(), gen.params[i].begin());

    const auto x = harness::random_vector(full.in_size(), 21);
    std::vector<float> y(full.out_size());
    nn::RunContext ctx{full.backend};
    full.layer->forward(ctx, x.data(), y.data(), rows);

    nn::RunContext gctx{gen.backend};
    for (int p = 0; p < T; ++p) {
        std::vector<float> xp(static_cast<size_t>(rows) * C), yp(xp.size());
        for (int n = 0; n < rows; ++n)
            std::copy_n(x.begin() + (static_cast<ptrdiff_t>(n) * T + p) * C, C, xp.begin() + n * C);
        gctx.position = p;
        gen.layer->forward(gctx, xp.data(), yp.data(), rows);
        for (int n = 0; n < rows; ++n)
            for (int c = 0; c < C; ++c) {
                INFO("position " << p << " sample " << n << " column " << c);
                REQUIRE(std::abs(yp[n * C + c] - y[(static_cast<size_t>(n) * T + p) * C + c]) < 1e-5);
            }
    }
    // Past the cache.
    std::vector<float> xp(static_cast<size_t>(rows) * C), yp(xp.size());
    gctx.position = T;
    REQUIRE_THROWS_WITH(gen.layer->forward(gctx, xp.data(), yp.data(), rows),
                        "layer 'attn' (causal_self_attention): position 6 is past its key/value cache of 6 positions; "
                        "generate at most 6 positions or give the layer a larger length");
    // A layer without a cache takes position 0 alone.
    harness::LayerUnderTest plain(attention(heads, true), {1, C}, rows);
    nn::RunContext pctx{plain.backend};
    pctx.position = 0;
    plain.layer->forward(pctx, xp.data(), yp.data(), rows);
    pctx.position = 2;
    REQUIRE_THROWS_WITH(plain.layer->forward(pctx, xp.data(), yp.data(), rows),
                        "layer 'attn' (causal_self_attention): position 2 needs a key/value cache, which the layer "
                        "keeps only when built on one position (input (1, 8)) with length > 1");
}

TEST_CASE("causal_self_attention errors name the layer, the shape and the fix", "[attention]") {
    using specs::layer;
    const auto attn = [](std::map<std::string, std::string> p) { return layer("causal_self_attention", p); };
    REQUIRE(message_of({4, 384}, {attn({{"heads", "5"}})}) ==
            "test.yaml:3:7: layer 'causal_self_attention' (causal_self_attention): heads 5 does not divide the width "
            "384; use a divisor of it such as 4 or 6");
    REQUIRE(message_of({4, 6}, {attn({{"heads", "8"}})}) ==
            "test.yaml:3:7: layer 'causal_self_attention' (causal_self_attention): heads 8 does not divide the width "
            "6; use a divisor of it such as 6");
    REQUIRE(message_of({384}, {attn({{"heads", "4"}})}) ==
            "test.yaml:3:7: layer 'causal_self_attention' (causal_self_attention): needs input (positions, width), "
            "got (384); put an embedding layer before it (token ids to (positions, width))");
    REQUIRE(message_of({2, 4, 8}, {attn({{"heads", "4"}})}) ==
            "test.yaml:3:7: layer 'causal_self_attention' (causal_self_attention): needs input (positions, width), "
            "got (2, 4, 8); put an embedding layer before it (token ids to (positions, width))");
    REQUIRE(message_of({4, 8}, {attn({})}) ==
            "test.yaml:3:7: model.layers[0] (causal_self_attention): heads: missing; this layer needs it (e.g. "
            "heads: 128)");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"length", "-1"}})}) ==
            "test.yaml:3:16: model.layers[0] (causal_self_attention): length: expected a positive integer (or 0: the "
            "input's positions), got '-1'");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"length", "1.5"}})}) ==
            "test.yaml:3:16: model.layers[0] (causal_self_attention): length: expected a positive integer (or 0: the "
            "input's positions), got '1.5'");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"length", "0"}})}) == "no error");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"length", "16"}, {"use_bias", "false"}})}) == "no error");

    // The resolved parameters, defaults included.
    std::vector<std::pair<std::string, std::string>> taken;
    const auto made = nn::builtin_layers().create(attn({{"heads", "2"}}), 0, &taken);
    REQUIRE(made->type() == "causal_self_attention");
    REQUIRE(taken == std::vector<std::pair<std::string, std::string>>{{"heads", "2"}, {"use_bias", "true"},
                                                                       {"length", "0"}});

    // Built directly: the same text without the config's place.
    nn::CausalSelfAttention direct(3, true);
    direct.set_name("a");
    REQUIRE_THROWS_WITH(direct.build(Shape{4, 8}),
                        "layer 'a' (causal_self_attention): heads 3 does not divide the width 8; use a divisor of it "
                        "such as 2 or 4");
}

// A quick timing, not run by default: ./unit_nn "[attention_timing]"
TEST_CASE("causal_self_attention CPU timing", "[.][attention_timing]") {
    const int T = 64, C = 128, heads = 4, rows = 12;
    harness::LayerUnderTest t(attention(heads, true), {T, C}, rows);
    const auto x = harness::random_vector(t.in_size(), 1);
    const auto dy = harness::random_vector(t.out_size(), 2);
    std::vector<float> y(t.out_size()), dx(t.in_size());
    nn::RunContext ctx{t.backend};
    ctx.training = true;
    const auto step = [&] {
        t.layer->forward(ctx, x.data(), y.data(), rows);
        t.layer->backward(ctx, x.data(), y.data(), dy.data(), dx.data(), rows);
    };
    for (int i = 0; i < 3; ++i) step();
    const int reps = 50;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) step();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / reps;
    std::printf("causal_self_attention rows %d T %d C %d heads %d: forward+backward %.3f ms\n", rows, T, C, heads, ms);
}
