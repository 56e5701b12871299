// CpuBackend pooling against hand-worked examples and a direct reference that
// scans each window over the input pixels it covers.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"

using gputrain::CpuBackend;
using gputrain::PoolMode;
using gputrain::Pool2dGeometry;

namespace {

struct PoolCase {
    int batch, in_h, in_w, channels, pool_h, pool_w, stride_h, stride_w, pad_top, pad_bottom, pad_left, pad_right;
};

Pool2dGeometry geometry_of(const PoolCase& c, PoolMode mode) {
    Pool2dGeometry g;
    g.mode = mode;
    g.batch = c.batch;
    g.in_h = c.in_h, g.in_w = c.in_w, g.channels = c.channels;
    g.pool_h = c.pool_h, g.pool_w = c.pool_w, g.stride_h = c.stride_h, g.stride_w = c.stride_w;
    g.pad_top = c.pad_top, g.pad_left = c.pad_left;
    g.out_h = (c.in_h + c.pad_top + c.pad_bottom - c.pool_h) / c.stride_h + 1;
    g.out_w = (c.in_w + c.pad_left + c.pad_right - c.pool_w) / c.stride_w + 1;
    return g;
}

size_t x_size(const Pool2dGeometry& g) { return static_cast<size_t>(g.batch) * g.in_h * g.in_w * g.channels; }
size_t y_size(const Pool2dGeometry& g) { return static_cast<size_t>(g.batch) * g.out_h * g.out_w * g.channels; }

// Forward and backward of the definition: the window's input pixels in
// row-major order; max keeps the first strictly larger value.
void reference_pool(const Pool2dGeometry& g, const std::vector<float>& x, const std::vector<float>& dy,
                    std::vector<double>& y, std::vector<double>& dx) {
    y.assign(y_size(g), 0.0);
    dx.assign(x_size(g), 0.0);
    auto x_at = [&](int n, int h, int w, int c) {
        return ((static_cast<size_t>(n) * g.in_h + h) * g.in_w + w) * g.channels + c;
    };
    for (int n = 0; n < g.batch; ++n)
        for (int oh = 0; oh < g.out_h; ++oh)
            for (int ow = 0; ow < g.out_w; ++ow)
                for (int c = 0; c < g.channels; ++c) {
                    const size_t yi = ((static_cast<size_t>(n) * g.out_h + oh) * g.out_w + ow) * g.channels + c;
                    std::vector<size_t> inside;
                    for (int ph = 0; ph < g.pool_h; ++ph)
                        for (int pw = 0; pw < g.pool_w; ++pw) {
                            const int h = oh * g.stride_h - g.pad_top + ph, w = ow * g.stride_w - g.pad_left + pw;
                            if (h >= 0 && h < g.in_h && w >= 0 && w < g.in_w) inside.push_back(x_at(n, h, w, c));
                        }
                    REQUIRE(!inside.empty());  // the cases never place a window wholly in the padding
                    if (g.mode == PoolMode::max) {
                        size_t best = inside[0];
                        for (size_t at : inside)
                            if (x[at] > x[best]) best = at;
                        y[yi] = x[best];
                        dx[best] += dy[yi];
                    } else {
                        double sum = 0.0;
                        for (size_t at : inside) sum += x[at];
                        y[yi] = sum / inside.size();
                        for (size_t at : inside) dx[at] += dy[yi] / inside.size();
                    }
                }
}

// b, in_h, in_w, channels, pool h/w, stride h/w, pad top/bottom/left/right
const PoolCase kCases[] = {
    {3, 7, 5, 3, 2, 2, 2, 2, 0, -1, 0, -1},  // 'valid': the odd last row and column are dropped
    {3, 7, 5, 3, 2, 2, 2, 2, 0, 1, 0, 1},  // Keras 'same': odd pixel padded at the bottom/right
    {1, 5, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1},  // overlapping windows, symmetric padding
    {3, 7, 7, 4, 3, 3, 2, 2, 1, 1, 1, 1},  // overlapping windows at stride 2
    {3, 8, 6, 2, 3, 2, 2, 1, 1, 2, 0, 1},  // non-square window, pad_bottom = pad_top + 1
};

void check_pool(const PoolCase& c, PoolMode mode, bool ties, uint32_t seed) {
    const Pool2dGeometry g = geometry_of(c, mode);
    INFO("mode=" << (mode == PoolMode::max ? "max" : "average") << " ties=" << ties << " batch=" << g.batch
                 << " in=" << g.in_h << "x" << g.in_w << "x" << g.channels << " pool=" << g.pool_h << "x" << g.pool_w
                 << " stride=" << g.stride_h << "," << g.stride_w << " out=" << g.out_h << "x" << g.out_w);
    REQUIRE(g.pad_bottom() == c.pad_bottom);
    REQUIRE(g.pad_right() == c.pad_right);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::uniform_int_distribution<int> small(-3, -1);  // all negative: a zero from the padding would win a max
    std::vector<float> x(x_size(g)), dy(y_size(g));
    for (float& v : x) v = ties ? static_cast<float>(small(rng)) : uniform(rng);
    for (float& v : dy) v = uniform(rng);
    std::vector<double> y_ref, dx_ref;
    reference_pool(g, x, dy, y_ref, dx_ref);

    CpuBackend be;
    std::vector<float> y(y_size(g), -99.0f), dx(x_size(g), -99.0f);
    be.pool2d_forward(g, x.data(), y.data());
    for (size_t i = 0; i < y.size(); ++i) {
        INFO("y[" << i << "]");
        REQUIRE(y[i] == Approx(y_ref[i]).epsilon(1e-6).margin(1e-7));
    }
    be.pool2d_backward(g, x.data(), y.data(), dy.data(), dx.data());
    for (size_t i = 0; i < dx.size(); ++i) {
        INFO("dx[" << i << "]");
        REQUIRE(dx[i] == Approx(dx_ref[i]).epsilon(1e-6).margin(1e-7));
    }
}

}  // namespace

TEST_CASE("pool2d forward and backward match the window definition") {
    const PoolMode mode = GENERATE(PoolMode::max, PoolMode::average);
    const bool ties = GENERATE(false, true);
    uint32_t seed = 21;
    for (const PoolCase& c : kCases) check_pool(c, mode, ties, seed++);
}

TEST_CASE("pool2d on a worked 3x3 example") {
    // x (one sample, one channel):  1 5 5
    //                               5 2 0
    //                               3 5 4
    const std::vector<float> x = {1, 5, 5, 5, 2, 0, 3, 5, 4};
    CpuBackend be;
    SECTION("max 2x2 stride 1: ties go to the first maximum in row-major order") {
        const Pool2dGeometry g = geometry_of({1, 3, 3, 1, 2, 2, 1, 1, 0, 0, 0, 0}, PoolMode::max);
        std::vector<float> y(4), dx(9, -1.0f);
        be.pool2d_forward(g, x.data(), y.data());
        REQUIRE(y == std::vector<float>{5, 5, 5, 5});
        const std::vector<float> dy = {1, 10, 100, 1000};
        be.pool2d_backward(g, x.data(), y.data(), dy.data(), dx.data());
        // Windows' first maxima: (0,1), (0,1), (1,0), (2,1).
        REQUIRE(dx == std::vector<float>{0, 11, 0, 100, 0, 0, 0, 1000, 0});
    }
    SECTION("average 2x2 stride 2 'same': padding is not counted") {
        const Pool2dGeometry g = geometry_of({1, 3, 3, 1, 2, 2, 2, 2, 0, 1, 0, 1}, PoolMode::average);
        std::vector<float> y(4), dx(9, -1.0f);
        be.pool2d_forward(g, x.data(), y.data());
        REQUIRE(y == std::vector<float>{3.25f, 2.5f, 4.0f, 4.0f});
        const std::vector<float> dy = {4, 2, 8, 1};
        be.pool2d_backward(g, x.data(), y.data(), dy.data(), dx.data());
        REQUIRE(dx == std::vector<float>{1, 1, 1, 1, 1, 1, 4, 4, 1});
    }
}
