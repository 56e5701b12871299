// conv2d, max/avg_pool2d, global_avg_pool2d and reshape: output shapes under
// Keras' padding rules, forward values against naive loops, and gradients
// against finite differences (odd sizes, strides 1 and 2, both paddings, dilation).
#include "layer_harness.hpp"
#include "nn/conv2d.hpp"
#include "nn/global_avg_pool2d.hpp"
#include "nn/pool2d.hpp"
#include "nn/reshape.hpp"

using namespace gputrain;
using harness::LayerUnderTest;

namespace {

nn::Conv2dSettings conv(int64_t filters, nn::IntPair kernel, nn::IntPair strides, nn::Padding padding,
                        nn::IntPair dilation = {1, 1}, Activation act = Activation::linear, bool bias = true) {
    nn::Conv2dSettings s;
    s.filters = filters;
    s.kernel = kernel;
    s.strides = strides;
    s.padding = padding;
    s.dilation = dilation;
    s.activation = act;
    s.use_bias = bias;
    return s;
}

// Keras' padding for one axis, written out independently of nn/spatial.cpp.
struct Axis {
    int64_t out, pad;
};
Axis keras_axis(int64_t in, int64_t k, int64_t s, int64_t d, bool same) {
    const int64_t span = d * (k - 1) + 1;
    if (!same) return {(in - span) / s + 1, 0};
    const int64_t out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
    return {out, total / 2};
}

// y[n, oy, ox, f] = b[f] + sum over ky, kx, c of x[n, iy, ix, c] * W[f, ky, kx, c], zero outside.
std::vector<float> naive_conv(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                              int n, int H, int W, int C, int F, const nn::Conv2dSettings& s) {
    const Axis ah = keras_axis(H, s.kernel.h, s.strides.h, s.dilation.h, s.padding == nn::Padding::same);
    const Axis aw = keras_axis(W, s.kernel.w, s.strides.w, s.dilation.w, s.padding == nn::Padding::same);
    std::vector<float> y(static_cast<size_t>(n * ah.out * aw.out * F));
    for (int i = 0; i < n; ++i)
        for (int64_t oy = 0; oy < ah.out; ++oy)
            for (int64_t ox = 0; ox < aw.out; ++ox)
                for (int f = 0; f < F; ++f) {
                    double acc = b.empty() ? 0.0 : b[f];
                    for (int64_t ky = 0; ky < s.kernel.h; ++ky)
                        for (int64_t kx = 0; kx < s.kernel.w; ++kx) {
                            const int64_t iy = oy * s.strides.h - ah.pad + ky * s.dilation.h;
                            const int64_t ix = ox * s.strides.w - aw.pad + kx * s.dilation.w;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                            for (int c = 0; c < C; ++c)
                                acc += static_cast<double>(x[((i * H + iy) * W + ix) * C + c]) *
                                       w[((f * s.kernel.h + ky) * s.kernel.w + kx) * C + c];
                        }
                    y[((i * ah.out + oy) * aw.out + ox) * F + f] = static_cast<float>(acc);
                }
    return y;
}

}  // namespace

TEST_CASE("conv2d output shapes follow Keras' same/valid rules") {
    struct Case {
        Shape in;
        nn::Conv2dSettings s;
        Shape out;
    };
    const std::vector<Case> cases{
        {{28, 28, 1}, conv(32, {3, 3}, {1, 1}, nn::Padding::same), {28, 28, 32}},
        {{28, 28, 1}, conv(8, {3, 3}, {1, 1}, nn::Padding::valid), {26, 26, 8}},
        {{7, 7, 2}, conv(4, {3, 3}, {2, 2}, nn::Padding::same), {4, 4, 4}},
        {{7, 6, 2}, conv(4, {3, 3}, {2, 2}, nn::Padding::valid), {3, 2, 4}},
        {{9, 9, 1}, conv(2, {3, 3}, {1, 1}, nn::Padding::valid, {2, 2}), {5, 5, 2}},
        {{5, 8, 3}, conv(2, {1, 5}, {1, 3}, nn::Padding::same), {5, 3, 2}},
    };
    for (const auto& c : cases) {
        nn::Conv2d layer(c.s);
        layer.set_name("conv2d");
        REQUIRE(layer.build(c.in) == c.out);
        REQUIRE(layer.param_specs()[0].shape == Shape{c.s.filters, c.s.kernel.h, c.s.kernel.w, c.in[2]});
    }
}

TEST_CASE("conv2d forward equals a naive convolution with Keras' padding") {
    const std::vector<nn::Conv2dSettings> settings{
        conv(3, {3, 3}, {1, 1}, nn::Padding::same), conv(3, {3, 2}, {2, 2}, nn::Padding::same),
        conv(2, {2, 3}, {2, 1}, nn::Padding::valid), conv(2, {3, 3}, {1, 1}, nn::Padding::same, {2, 2}),
        conv(2, {4, 4}, {3, 3}, nn::Padding::same, {1, 1}, Activation::linear, false)};
    for (const auto& s : settings) {
        INFO("kernel " << s.kernel.h << "x" << s.kernel.w << " stride " << s.strides.h << "x" << s.strides.w
                       << " dilation " << s.dilation.h << " same " << (s.padding == nn::Padding::same));
        const int n = 2, H = 6, W = 7, C = 2;
        LayerUnderTest t(std::make_unique<nn::Conv2d>(s), {H, W, C}, n);
        const auto x = harness::random_vector(t.in_size(), 21);
        std::vector<float> y(t.out_size());
        nn::RunContext ctx{t.backend, false};
        t.layer->forward(ctx, x.data(), y.data(), n);
        const auto expected = naive_conv(x, t.params[0], s.use_bias ? t.params[1] : std::vector<float>{}, n, H, W, C,
                                         static_cast<int>(s.filters), s);
        REQUIRE(expected.size() == y.size());
        for (size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == Approx(expected[i]).margin(1e-5));
    }
}

TEST_CASE("conv2d gradients match finite differences (odd sizes, strides 1 and 2, both paddings, dilation 2)") {
    const std::vector<std::pair<Shape, nn::Conv2dSettings>> cases{
        {{5, 7, 3}, conv(3, {3, 3}, {1, 1}, nn::Padding::same)},
        {{5, 7, 3}, conv(3, {3, 3}, {1, 1}, nn::Padding::valid, {1, 1}, Activation::relu)},
        {{7, 5, 2}, conv(3, {3, 2}, {2, 2}, nn::Padding::same, {1, 1}, Activation::tanh)},
        {{7, 6, 2}, conv(2, {3, 3}, {2, 2}, nn::Padding::valid)},
        {{7, 7, 2}, conv(2, {3, 3}, {1, 1}, nn::Padding::same, {2, 2}, Activation::sigmoid)},
        {{7, 5, 1}, conv(3, {2, 3}, {1, 1}, nn::Padding::valid, {2, 2}, Activation::linear, false)},
        {{3, 3, 4}, conv(5, {1, 1}, {1, 1}, nn::Padding::valid, {1, 1}, Activation::softmax)},
    };
    for (const auto& [in, s] : cases) {
        INFO("input " << shape_to_string(in, false) << " kernel " << s.kernel.h << "x" << s.kernel.w << " stride "
                      << s.strides.h << " dilation " << s.dilation.h << " same " << (s.padding == nn::Padding::same)
                      << " activation " << activation_name(s.activation));
        LayerUnderTest t(std::make_unique<nn::Conv2d>(s), in, 3);
        nn::RunContext ctx{t.backend, true};
        harness::gradient_check(t, ctx);
    }
}

TEST_CASE("max/avg_pool2d: shapes, values against naive loops, gradients against finite differences") {
    struct Case {
        PoolMode mode;
        nn::IntPair pool, strides;
        nn::Padding padding;
        Shape in, out;
    };
    const std::vector<Case> cases{
        {PoolMode::max, {2, 2}, {2, 2}, nn::Padding::valid, {28, 28, 32}, {14, 14, 32}},
        {PoolMode::max, {2, 2}, {2, 2}, nn::Padding::valid, {7, 5, 2}, {3, 2, 2}},
        {PoolMode::max, {3, 3}, {2, 2}, nn::Padding::same, {7, 5, 2}, {4, 3, 2}},
        {PoolMode::max, {2, 3}, {1, 1}, nn::Padding::valid, {5, 5, 3}, {4, 3, 3}},
        {PoolMode::average, {2, 2}, {2, 2}, nn::Padding::same, {7, 5, 2}, {4, 3, 2}},
        {PoolMode::average, {3, 3}, {1, 1}, nn::Padding::same, {5, 4, 2}, {5, 4, 2}},
        {PoolMode::average, {3, 2}, {2, 1}, nn::Padding::valid, {7, 5, 3}, {3, 4, 3}},
    };
    for (const auto& c : cases) {
        INFO((c.mode == PoolMode::max ? "max" : "avg") << " pool " << c.pool.h << "x" << c.pool.w << " stride "
                                                         << c.strides.h << "x" << c.strides.w << " input "
                                                         << shape_to_string(c.in, false));
        const int n = 2;
        LayerUnderTest t(std::make_unique<nn::Pool2d>(c.mode, c.pool, c.strides, c.padding), c.in, n);
        REQUIRE(t.out_shape == c.out);
        if (shape_elements(c.in) > 500) continue;  // the shape case only

        const auto x = harness::random_vector(t.in_size(), 31);
        std::vector<float> y(t.out_size());
        nn::RunContext ctx{t.backend, true};
        t.layer->forward(ctx, x.data(), y.data(), n);
        const bool same = c.padding == nn::Padding::same;
        const Axis ah = keras_axis(c.in[0], c.pool.h, c.strides.h, 1, same);
        const Axis aw = keras_axis(c.in[1], c.pool.w, c.strides.w, 1, same);
        const int64_t H = c.in[0], W = c.in[1], C = c.in[2];
        for (int i = 0; i < n; ++i)
            for (int64_t oy = 0; oy < ah.out; ++oy)
                for (int64_t ox = 0; ox < aw.out; ++ox)
                    for (int64_t ch = 0; ch < C; ++ch) {
                        double best = -1e30, sum = 0;
                        int count = 0;
                        for (int64_t ky = 0; ky < c.pool.h; ++ky)
                            for (int64_t kx = 0; kx < c.pool.w; ++kx) {
                                const int64_t iy = oy * c.strides.h - ah.pad + ky, ix = ox * c.strides.w - aw.pad + kx;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                const double v = x[static_cast<size_t>(((i * H + iy) * W + ix) * C + ch)];
                                best = std::max(best, v);
                                sum += v;
                                ++count;
                            }
                        const double expected = c.mode == PoolMode::max ? best : sum / count;
                        REQUIRE(y[static_cast<size_t>(((i * ah.out + oy) * aw.out + ox) * C + ch)] ==
                                Approx(expected).margin(1e-6));
                    }
        harness::gradient_check(t, ctx);
    }
}

TEST_CASE("global_avg_pool2d averages each channel over the image; gradients check out") {
    LayerUnderTest t(std::make_unique<nn::GlobalAvgPool2d>(), {3, 5, 4}, 2);
    REQUIRE(t.out_shape == Shape{4});
    const auto x = harness::random_vector(t.in_size(), 41);
    std::vector<float> y(t.out_size());
    nn::RunContext ctx{t.backend, true};
    t.layer->forward(ctx, x.data(), y.data(), 2);
    for (int i = 0; i < 2; ++i)
        for (int c = 0; c < 4; ++c) {
            double s = 0;
            for (int p = 0; p < 15; ++p) s += x[static_cast<size_t>((i * 15 + p) * 4 + c)];
            REQUIRE(y[static_cast<size_t>(i * 4 + c)] == Approx(s / 15).margin(1e-6));
        }
    harness::gradient_check(t, ctx);
}

TEST_CASE("reshape infers one -1 axis and passes values and gradients through") {
    LayerUnderTest t(std::make_unique<nn::Reshape>(Shape{-1, 4, 1}), {12}, 3);
    REQUIRE(t.out_shape == Shape{3, 4, 1});
    LayerUnderTest plain(std::make_unique<nn::Reshape>(Shape{28, 28, 1}), {784}, 1);
    REQUIRE(plain.out_shape == Shape{28, 28, 1});
    const auto x = harness::random_vector(t.in_size(), 51);
    std::vector<float> y(t.out_size());
    nn::RunContext ctx{t.backend, true};
    t.layer->forward(ctx, x.data(), y.data(), 3);
    REQUIRE(y == x);
    harness::gradient_check(t, ctx);
}
