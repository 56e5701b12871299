// causal_self_attention: forward against a naive reference, finite
// differences of every gradient, generation through the key/value cache
// against the full forward, and its error texts. Attention dropout: the ops
// against a naive reference with an explicit mask from the same hash
// (forward and backward), finite differences with the mask fixed by its key,
// a shard's mask as the whole batch's, inference without it, and its key's
// errors.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "backend/cpu/sizing_backend.hpp"
#include "backend/ops/attention.hpp"
#include "core/error.hpp"
#include "layer_harness.hpp"
#include "model_specs.hpp"
#include "nn/attention.hpp"
#include "nn/model.hpp"
#include "nn/registry.hpp"

using namespace gputrain;

namespace {

std::unique_ptr<nn::Layer> attention(int64_t heads, bool use_bias, int64_t length = 0, float dropout = 0.0f,
                                     bool rotary = false) {
    auto layer = std::make_unique<nn::CausalSelfAttention>(heads, use_bias, length, dropout, rotary);
    layer->set_name("attn");
    return layer;
}

// RoPE in double (GPT-NeoX's half split, base 10000) on the D columns at x.
void rotate_reference(double* x, int position, int D) {
    for (int i = 0; i < D / 2; ++i) {
        const double angle = position * std::pow(10000.0, -2.0 * i / D);
        const double a = x[i], b = x[i + D / 2];
        x[i] = a * std::cos(angle) - b * std::sin(angle);
        x[i + D / 2] = b * std::cos(angle) + a * std::sin(angle);
    }
}

// y for every sample of x (rows x T x C), in double with triple loops, from the
// layer's parameters as the harness drew them (rotary: RoPE on q and k first).
std::vector<double> reference(const harness::LayerUnderTest& t, const std::vector<float>& x, int T, int C, int heads,
                              bool use_bias, bool rotary = false) {
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
        if (rotary)
            for (int i = 0; i < T; ++i)
                for (int part = 0; part < 2 * C; part += D) rotate_reference(&qkv[i * 3 * C + part], i, D);
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

namespace {

// The ops' reference in double: out and dqkv for qkv [rows * T, 3C] (ld 3C),
// dout [rows * T, C], with dropout factors Z from ops::attention_keep (the
// whole mask spelled out) and delta formed as rowsum(dP o P) directly, not
// through the kernels' rowsum(dO o out).
struct DropoutReference {
    std::vector<double> out, dqkv;
    size_t kept = 0, visible = 0;
};
DropoutReference dropout_reference(const std::vector<float>& qkv, const std::vector<float>& dout, int rows, int T,
                                   int heads, int D, uint64_t key, float rate, int64_t first_sample) {
    const int C = heads * D;
    const float keep_scale = 1.0f / (1.0f - rate);
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    DropoutReference r;
    r.out.assign(static_cast<size_t>(rows) * T * C, 0.0);
    r.dqkv.assign(static_cast<size_t>(rows) * T * 3 * C, 0.0);
    const auto at = [&](int n, int t, int col) { return (static_cast<size_t>(n) * T + t) * 3 * C + col; };
    for (int n = 0; n < rows; ++n)
        for (int h = 0; h < heads; ++h) {
            const size_t TT = static_cast<size_t>(T) * static_cast<size_t>(T);
            std::vector<double> P(TT), Z(TT), dP(TT);
            for (int i = 0; i < T; ++i) {
                const uint64_t row = ((static_cast<uint64_t>(first_sample + n) * heads + h) * T + i) * T;
                double mx = -1e300;
                for (int j = 0; j <= i; ++j) {
                    double s = 0;
                    for (int d = 0; d < D; ++d)
                        s += static_cast<double>(qkv[at(n, i, h * D + d)]) * qkv[at(n, j, C + h * D + d)];
                    P[i * T + j] = s * scale;
                    mx = std::max(mx, P[i * T + j]);
                }
                double sum = 0;
                for (int j = 0; j <= i; ++j) sum += (P[i * T + j] = std::exp(P[i * T + j] - mx));
                for (int j = 0; j <= i; ++j) {
                    P[i * T + j] /= sum;
                    Z[i * T + j] = ops::attention_keep(key, row, j, rate, keep_scale);
                    r.kept += Z[i * T + j] != 0.0;
                    ++r.visible;
                }
                for (int d = 0; d < D; ++d) {
                    double o = 0;
                    for (int j = 0; j <= i; ++j) o += P[i * T + j] * Z[i * T + j] * qkv[at(n, j, 2 * C + h * D + d)];
                    r.out[(static_cast<size_t>(n) * T + i) * C + h * D + d] = o;
                }
            }
            for (int i = 0; i < T; ++i) {
                const float* g = dout.data() + (static_cast<size_t>(n) * T + i) * C + h * D;
                double delta = 0;
                for (int j = 0; j <= i; ++j) {
                    double dpd = 0;  // dO V^T
                    for (int d = 0; d < D; ++d) dpd += static_cast<double>(g[d]) * qkv[at(n, j, 2 * C + h * D + d)];
                    dP[i * T + j] = Z[i * T + j] * dpd;
                    delta += dP[i * T + j] * P[i * T + j];
                    for (int d = 0; d < D; ++d)  // dV = (Z o P)^T dO
                        r.dqkv[at(n, j, 2 * C + h * D + d)] += Z[i * T + j] * P[i * T + j] * g[d];
                }
                for (int j = 0; j <= i; ++j) {
                    const double ds = P[i * T + j] * (dP[i * T + j] - delta);
                    for (int d = 0; d < D; ++d) {
                        r.dqkv[at(n, i, h * D + d)] += scale * ds * qkv[at(n, j, C + h * D + d)];
                        r.dqkv[at(n, j, C + h * D + d)] += scale * ds * qkv[at(n, i, h * D + d)];
                    }
                }
            }
        }
    return r;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b, size_t* worst_at) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::abs(a[i] - b[i]) > m) {
            m = std::abs(a[i] - b[i]);
            *worst_at = i;
        }
    return m;
}

nn::RunContext training_step(Backend& be, int64_t epoch, int64_t step, int64_t row_offset = 0) {
    nn::RunContext ctx{be};
    ctx.training = true;
    ctx.seed = 42;
    ctx.epoch = epoch;
    ctx.step = step;
    ctx.row_offset = row_offset;
    return ctx;
}

}  // namespace

TEST_CASE("attention dropout: the CPU ops match a naive reference with the mask spelled out", "[attention]") {
    struct Case {
        int rows, T, heads, D;
        float rate;
        int64_t first_sample;
    };
    // T 70: more query rows than the CPU's block of 64.
    const Case c = GENERATE(Case{2, 7, 2, 4, 0.3f, 0}, Case{3, 5, 1, 8, 0.5f, 17}, Case{1, 70, 2, 4, 0.2f, 3},
                            Case{2, 1, 2, 3, 0.4f, 1});
    INFO("rows " << c.rows << " T " << c.T << " heads " << c.heads << " D " << c.D << " rate " << c.rate
                 << " first sample " << c.first_sample);
    const int C = c.heads * c.D;
    const size_t m = static_cast<size_t>(c.rows) * c.T;
    const auto qkv = harness::random_vector(m * 3 * C, 5, -1.5f, 1.5f);
    const auto dout = harness::random_vector(m * C, 6);
    const uint64_t key = 0x0123456789abcdefull;
    const uint32_t words[2] = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
    CpuBackend be;
    std::vector<float> out(m * C), lse(m * c.heads), dqkv(m * 3 * C, 99.0f), delta(m * c.heads);
    std::vector<float> tile(ops::attention_cpu_tile_floats(c.T, c.T, c.D));
    ops::AttentionForward fwd{qkv.data(), 3 * C, out.data(), C, lse.data(), c.rows, c.T, c.heads, c.D, tile.data()};
    fwd.dropout_key = words;
    fwd.dropout_rate = c.rate;
    fwd.first_sample = c.first_sample;
    run_op(be, fwd);
    ops::AttentionBackward bwd{qkv.data(), 3 * C, out.data(), dout.data(), C, lse.data(), dqkv.data(), 3 * C,
                               delta.data(), c.rows, c.T, c.heads, c.D, tile.data()};
    bwd.dropout_key = words;
    bwd.dropout_rate = c.rate;
    bwd.first_sample = c.first_sample;
    run_op(be, bwd);

    const auto ref = dropout_reference(qkv, dout, c.rows, c.T, c.heads, c.D, key, c.rate, c.first_sample);
    // Some dropped, some kept.
    if (ref.visible > 50) {
        REQUIRE(ref.kept > 0);
        REQUIRE(ref.kept < ref.visible);
        const double kept = static_cast<double>(ref.kept) / static_cast<double>(ref.visible);
        REQUIRE(std::abs(kept - (1.0 - c.rate)) < 0.1);
    }
    size_t at_out = 0, at_d = 0;
    const double e_out = max_abs_diff(out, ref.out, &at_out), e_d = max_abs_diff(dqkv, ref.dqkv, &at_d);
    std::printf("attention dropout vs reference (rows %d T %d heads %d D %d rate %.1f): out %.2e, dqkv %.2e\n",
                c.rows, c.T, c.heads, c.D, static_cast<double>(c.rate), e_out, e_d);
    INFO("out[" << at_out << "] off by " << e_out << "; dqkv[" << at_d << "] off by " << e_d);
    REQUIRE(e_out < 1e-5);
    REQUIRE(e_d < 1e-5);

    // Without the key: the plain attention, which the reference gives at rate 0.
    std::vector<float> plain(m * C);
    run_op(be, ops::AttentionForward{qkv.data(), 3 * C, plain.data(), C, lse.data(), c.rows, c.T, c.heads, c.D,
                                     tile.data()});
    const auto none = dropout_reference(qkv, dout, c.rows, c.T, c.heads, c.D, key, 0.0f, 0);
    REQUIRE(max_abs_diff(plain, none.out) < 1e-5);
}

TEST_CASE("attention dropout: gradients match finite differences with the step's mask", "[attention]") {
    struct Case {
        int T, C, heads, rows;
        bool use_bias;
        float rate;
    };
    const Case c = GENERATE(Case{7, 8, 2, 2, true, 0.3f}, Case{5, 6, 1, 3, false, 0.5f}, Case{70, 4, 2, 1, true, 0.1f});
    INFO("T " << c.T << " C " << c.C << " heads " << c.heads << " rows " << c.rows << " rate " << c.rate);
    harness::LayerUnderTest t(attention(c.heads, c.use_bias, 0, c.rate), {c.T, c.C}, c.rows, 11);
    REQUIRE(t.layer->scratch_fixed() == 64);
    nn::RunContext ctx = training_step(t.backend, 1, 3, 5);
    t.layer->prepare_step(ctx);
    harness::gradient_check(t, ctx);

    // The largest error of dx against central differences, for the record.
    std::vector<float> x = harness::random_vector(t.in_size(), 7);
    const std::vector<float> w = harness::random_vector(t.out_size(), 8);
    std::vector<float> y(t.out_size()), dx(t.in_size());
    t.layer->forward(ctx, x.data(), y.data(), t.rows);
    t.layer->backward(ctx, x.data(), y.data(), w.data(), dx.data(), t.rows);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const float keep = x[i], h = 1e-3f;
        x[i] = keep + h;
        const double up = t.objective(ctx, x, w);
        x[i] = keep - h;
        const double down = t.objective(ctx, x, w);
        x[i] = keep;
        worst = std::max(worst, std::abs(dx[i] - (up - down) / (2.0 * h)));
    }
    std::printf("attention dropout finite differences (T %d C %d heads %d rate %.1f): dx off by at most %.2e\n",
                c.T, c.C, c.heads, static_cast<double>(c.rate), worst);
    REQUIRE(worst < 1e-2);
}

TEST_CASE("attention dropout: a shard's mask is the whole batch's, inference has none, steps differ",
          "[attention]") {
    const int T = 9, C = 8, heads = 2, rows = 4;
    harness::LayerUnderTest whole(attention(heads, true, 0, 0.25f), {T, C}, rows, 3);
    harness::LayerUnderTest shard(attention(heads, true, 0, 0.25f), {T, C}, 2, 3);
    harness::LayerUnderTest plain(attention(heads, true), {T, C}, rows, 3);
    const auto x = harness::random_vector(whole.in_size(), 8);
    const auto dy = harness::random_vector(whole.out_size(), 9);
    std::vector<float> y(whole.out_size()), dx(whole.in_size());
    nn::RunContext ctx = training_step(whole.backend, 0, 7);
    whole.layer->prepare_step(ctx);
    whole.layer->forward(ctx, x.data(), y.data(), rows);
    whole.layer->backward(ctx, x.data(), y.data(), dy.data(), dx.data(), rows);

    // Samples 2 and 3 on a replica of their own (row_offset 2): the same bits.
    const size_t half = whole.in_size() / 2;
    std::vector<float> ys(half), dxs(half);
    nn::RunContext sctx = training_step(shard.backend, 0, 7, 2);
    shard.layer->prepare_step(sctx);
    shard.layer->forward(sctx, x.data() + half, ys.data(), 2);
    shard.layer->backward(sctx, x.data() + half, ys.data(), dy.data() + half, dxs.data(), 2);
    REQUIRE(std::equal(ys.begin(), ys.end(), y.begin() + static_cast<ptrdiff_t>(half)));
    REQUIRE(std::equal(dxs.begin(), dxs.end(), dx.begin() + static_cast<ptrdiff_t>(half)));

    // Inference: no dropout, as the layer without it.
    std::vector<float> yi(y.size()), yp(y.size());
    nn::RunContext infer{whole.backend};
    whole.layer->forward(infer, x.data(), yi.data(), rows);
    nn::RunContext pctx{plain.backend};
    plain.layer->forward(pctx, x.data(), yp.data(), rows);
    REQUIRE(yi == yp);
    REQUIRE(y != yp);

    // The same step again gives the same output; another step (or epoch) another mask.
    std::vector<float> again(y.size()), next(y.size()), other_epoch(y.size());
    whole.layer->forward(ctx, x.data(), again.data(), rows);
    REQUIRE(again == y);
    nn::RunContext step8 = training_step(whole.backend, 0, 8);
    whole.layer->prepare_step(step8);
    whole.layer->forward(step8, x.data(), next.data(), rows);
    REQUIRE(next != y);
    nn::RunContext epoch1 = training_step(whole.backend, 1, 7);
    whole.layer->prepare_step(epoch1);
    whole.layer->forward(epoch1, x.data(), other_epoch.data(), rows);
    REQUIRE(other_epoch != y);
    REQUIRE(other_epoch != next);
}

TEST_CASE("attention dropout: the key's errors and its resolved form", "[attention]") {
    using specs::layer;
    const auto attn = [](std::map<std::string, std::string> p) { return layer("causal_self_attention", p); };
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"dropout", "1.5"}})}) ==
            "test.yaml:3:17: model.layers[0] (causal_self_attention): dropout: must be in [0.0, 1.0), got 1.5");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"dropout", "1"}})}) ==
            "test.yaml:3:17: model.layers[0] (causal_self_attention): dropout: must be in [0.0, 1.0), got 1");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"dropout", "-0.1"}})}) ==
            "test.yaml:3:17: model.layers[0] (causal_self_attention): dropout: must be in [0.0, 1.0), got -0.1");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"dropout", "lots"}})}) ==
            "test.yaml:3:17: model.layers[0] (causal_self_attention): dropout: expected a number, got 'lots'");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"dropout", "0.99999999"}})}) ==
            "test.yaml:3:17: model.layers[0] (causal_self_attention): dropout: is 1 in float32, which drops every "
            "attention weight; give at most 0.9999999");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"dropout", "0"}})}) == "no error");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"dropout", "0.2"}})}) == "no error");

    std::vector<std::pair<std::string, std::string>> taken;
    const auto made = nn::builtin_layers().create(attn({{"heads", "2"}, {"dropout", "0.2"}}), 0, &taken);
    REQUIRE(taken == std::vector<std::pair<std::string, std::string>>{
                         {"heads", "2"}, {"use_bias", "true"}, {"length", "0"}, {"dropout", "0.2"}});
    REQUIRE(static_cast<nn::CausalSelfAttention&>(*made).dropout() == 0.2f);
    made->build(Shape{4, 8});
    REQUIRE(made->detail() == "2 heads, dropout 0.2");
    REQUIRE(made->scratch_fixed() == 64);
    const auto none = nn::builtin_layers().create(attn({{"heads", "2"}}), 0, nullptr);
    REQUIRE(none->scratch_fixed() == 0);
}

TEST_CASE("rotary: the op turns each head's query and key pairs by position, and back", "[attention]") {
    const int rows = 2, T = 5, heads = 2, D = 6, C = heads * D, ld = 3 * C + 2;
    const int64_t first = GENERATE(0, 37);
    INFO("first position " << first);
    const auto qkv = harness::random_vector(static_cast<size_t>(rows) * T * ld, 4);
    CpuBackend be;
    std::vector<float> turned = qkv;
    run_op(be, ops::AttentionRotary{turned.data(), ld, rows, T, heads, D, first, false});
    double worst = 0;
    for (int n = 0; n < rows; ++n)
        for (int t = 0; t < T; ++t) {
            const size_t row = (static_cast<size_t>(n) * T + t) * ld;
            for (int col = 0; col < ld; col += 1) {
                if (col >= 2 * C) {  // values and the padding: untouched
                    REQUIRE(turned[row + col] == qkv[row + col]);
                    continue;
                }
                if (col % D != 0) continue;
                std::vector<double> x(qkv.begin() + static_cast<ptrdiff_t>(row + col),
                                      qkv.begin() + static_cast<ptrdiff_t>(row + col + D));
                rotate_reference(x.data(), static_cast<int>(first + t), D);
                for (int d = 0; d < D; ++d) worst = std::max(worst, std::abs(turned[row + col + d] - x[d]));
            }
        }
    std::printf("rotary op vs double reference (first position %lld): %.2e\n", static_cast<long long>(first), worst);
    REQUIRE(worst < 1e-6);
    if (first == 0)  // position 0 turns nothing
        for (int c = 0; c < 2 * C; ++c) REQUIRE(turned[c] == qkv[c]);
    std::vector<float> back = turned;
    run_op(be, ops::AttentionRotary{back.data(), ld, rows, T, heads, D, first, true});
    for (size_t i = 0; i < back.size(); ++i) REQUIRE(std::abs(back[i] - qkv[i]) < 1e-6);
}

TEST_CASE("rotary: the layer matches a naive reference, and its gradients finite differences", "[attention]") {
    struct Case {
        int T, C, heads, rows;
        bool use_bias;
        float dropout;
    };
    const Case c = GENERATE(Case{7, 8, 2, 2, true, 0.0f}, Case{5, 12, 3, 1, false, 0.0f},
                            Case{70, 4, 2, 1, true, 0.0f}, Case{6, 8, 2, 2, true, 0.3f});
    INFO("T " << c.T << " C " << c.C << " heads " << c.heads << " dropout " << c.dropout);
    {
        harness::LayerUnderTest t(attention(c.heads, c.use_bias, 0, 0.0f, true), {c.T, c.C}, c.rows, 2);
        const auto x = harness::random_vector(t.in_size(), 3);
        std::vector<float> y(t.out_size());
        nn::RunContext ctx{t.backend};
        t.layer->forward(ctx, x.data(), y.data(), t.rows);
        const double e = max_abs_diff(y, reference(t, x, c.T, c.C, c.heads, c.use_bias, true));
        std::printf("rotary attention vs double reference (T %d C %d heads %d): %.2e\n", c.T, c.C, c.heads, e);
        REQUIRE(e < 1e-5);
        if (c.T > 1) REQUIRE(max_abs_diff(y, reference(t, x, c.T, c.C, c.heads, c.use_bias, false)) > 1e-3);
    }
    harness::LayerUnderTest t(attention(c.heads, c.use_bias, 0, c.dropout, true), {c.T, c.C}, c.rows, 11);
    nn::RunContext ctx = training_step(t.backend, 0, 2, 1);
    t.layer->prepare_step(ctx);
    harness::gradient_check(t, ctx);
    std::vector<float> x = harness::random_vector(t.in_size(), 7);
    const std::vector<float> w = harness::random_vector(t.out_size(), 8);
    std::vector<float> y(t.out_size()), dx(t.in_size());
    t.layer->forward(ctx, x.data(), y.data(), t.rows);
    t.layer->backward(ctx, x.data(), y.data(), w.data(), dx.data(), t.rows);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const float keep = x[i], h = 1e-3f;
        x[i] = keep + h;
        const double up = t.objective(ctx, x, w);
        x[i] = keep - h;
        const double down = t.objective(ctx, x, w);
        x[i] = keep;
        worst = std::max(worst, std::abs(dx[i] - (up - down) / (2.0 * h)));
    }
    std::printf("rotary finite differences (T %d C %d heads %d dropout %.1f): dx off by at most %.2e\n", c.T, c.C,
                c.heads, static_cast<double>(c.dropout), worst);
    REQUIRE(worst < 1e-2);
}

TEST_CASE("rotary: generation turns each position by its absolute index, as the full forward", "[attention]") {
    const int T = 9, C = 8, heads = 2, rows = 2;
    harness::LayerUnderTest full(attention(heads, true, 0, 0.0f, true), {T, C}, rows, 5);
    harness::LayerUnderTest gen(attention(heads, true, T, 0.0f, true), {1, C}, rows, 99);
    for (size_t i = 0; i < full.params.size(); ++i)
        std::copy(full.params[i].begin(), full.params[i].end(), gen.params[i].begin());
    const auto x = harness::random_vector(full.in_size(), 21);
    std::vector<float> y(full.out_size());
    nn::RunContext ctx{full.backend};
    full.layer->forward(ctx, x.data(), y.data(), rows);
    nn::RunContext gctx{gen.backend};
    double worst = 0;
    for (int p = 0; p < T; ++p) {
        std::vector<float> xp(static_cast<size_t>(rows) * C), yp(xp.size());
        for (int n = 0; n < rows; ++n)
            std::copy_n(x.begin() + (static_cast<ptrdiff_t>(n) * T + p) * C, C, xp.begin() + n * C);
        gctx.position = p;
        gen.layer->forward(gctx, xp.data(), yp.data(), rows);
        for (int n = 0; n < rows; ++n)
            for (int c = 0; c < C; ++c)
                worst = std::max(worst, static_cast<double>(std::abs(yp[n * C + c] -
                                                                     y[(static_cast<size_t>(n) * T + p) * C + c])));
    }
    std::printf("rotary: generation vs the full forward: %.2e\n", worst);
    REQUIRE(worst < 1e-5);
}

TEST_CASE("rotary: the key, its errors and its resolved form", "[attention]") {
    using specs::layer;
    const auto attn = [](std::map<std::string, std::string> p) { return layer("causal_self_attention", p); };
    REQUIRE(message_of({4, 6}, {attn({{"heads", "2"}, {"rotary", "true"}})}) ==
            "test.yaml:3:7: layer 'causal_self_attention' (causal_self_attention): rotary turns pairs of a head's "
            "columns, and its head size (width 6 / heads 2) is 3, odd; choose heads so that width / heads is even, "
            "such as heads: 1");
    REQUIRE(message_of({4, 5}, {attn({{"heads", "1"}, {"rotary", "true"}})}) ==
            "test.yaml:3:7: layer 'causal_self_attention' (causal_self_attention): rotary turns pairs of a head's "
            "columns, and its head size (width 5 / heads 1) is 5, odd; choose heads so that width / heads is even "
            "(the width is odd: make it even)");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"rotary", "maybe"}})}) ==
            "test.yaml:3:16: model.layers[0] (causal_self_attention): rotary: expected true or false, got 'maybe'");
    REQUIRE(message_of({4, 8}, {attn({{"heads", "2"}, {"rotary", "true"}})}) == "no error");
    REQUIRE(message_of({4, 6}, {attn({{"heads", "2"}, {"rotary", "false"}})}) == "no error");

    std::vector<std::pair<std::string, std::string>> taken;
    const auto made = nn::builtin_layers().create(attn({{"heads", "2"}, {"rotary", "true"}}), 0, &taken);
    REQUIRE(taken == std::vector<std::pair<std::string, std::string>>{
                         {"heads", "2"}, {"use_bias", "true"}, {"length", "0"}, {"rotary", "true"}});
    REQUIRE(static_cast<nn::CausalSelfAttention&>(*made).rotary());
    made->build(Shape{4, 8});
    REQUIRE(made->detail() == "2 heads, rotary");
    const auto plain = nn::builtin_layers().create(attn({{"heads", "2"}}), 0, &taken);
    REQUIRE_FALSE(static_cast<nn::CausalSelfAttention&>(*plain).rotary());
}
