// CpuBackend convolution against direct loops over the convolution's
// definition (no im2col), in double, on awkward geometries.
#include <catch2/catch.hpp>

#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"
#include "random_data.hpp"

using test_data::random_vector;

using gputrain::Conv2dGeometry;
using gputrain::CpuBackend;

namespace {

struct ConvCase {
    int batch, in_h, in_w, in_c, out_c, kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
    int pad_top, pad_bottom, pad_left, pad_right;
};

Conv2dGeometry geometry_of(const ConvCase& c) {
    Conv2dGeometry g;
    g.batch = c.batch;
    g.in_h = c.in_h, g.in_w = c.in_w, g.in_c = c.in_c, g.out_c = c.out_c;
    g.kernel_h = c.kernel_h, g.kernel_w = c.kernel_w;
    g.stride_h = c.stride_h, g.stride_w = c.stride_w;
    g.dilation_h = c.dilation_h, g.dilation_w = c.dilation_w;
    g.pad_top = c.pad_top, g.pad_left = c.pad_left;
    g.out_h = (c.in_h + c.pad_top + c.pad_bottom - (c.dilation_h * (c.kernel_h - 1) + 1)) / c.stride_h + 1;
    g.out_w = (c.in_w + c.pad_left + c.pad_right - (c.dilation_w * (c.kernel_w - 1) + 1)) / c.stride_w + 1;
    return g;
}

size_t x_size(const Conv2dGeometry& g) { return static_cast<size_t>(g.batch) * g.in_h * g.in_w * g.in_c; }
size_t y_size(const Conv2dGeometry& g) { return static_cast<size_t>(g.batch) * g.out_h * g.out_w * g.out_c; }
size_t w_size(const Conv2dGeometry& g) { return static_cast<size_t>(g.out_c) * g.kernel_h * g.kernel_w * g.in_c; }

// Calls f(x index, y index, w index) for every (input, output, weight) triple
// the convolution multiplies together: the definition, read off directly.
template <typename F>
void for_each_tap(const Conv2dGeometry& g, F f) {
    for (int n = 0; n < g.batch; ++n)
        for (int oh = 0; oh < g.out_h; ++oh)
            for (int ow = 0; ow < g.out_w; ++ow)
                for (int co = 0; co < g.out_c; ++co)
                    for (int kh = 0; kh < g.kernel_h; ++kh)
                        for (int kw = 0; kw < g.kernel_w; ++kw) {
                            const int ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
                            const int iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
                            if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) continue;
                            const size_t yi = ((size_t{1} * n * g.out_h + oh) * g.out_w + ow) * g.out_c + co;
                            const size_t x_pixel = ((size_t{1} * n * g.in_h + ih) * g.in_w + iw) * g.in_c;
                            const size_t w_tap = ((size_t{1} * co * g.kernel_h + kh) * g.kernel_w + kw) * g.in_c;
                            for (int ci = 0; ci < g.in_c; ++ci) f(x_pixel + ci, yi, w_tap + ci);
                        }
}

void require_close(const std::vector<float>& got, const std::vector<double>& expected, const char* what) {
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
        INFO(what << "[" << i << "]");
        REQUIRE(got[i] == Approx(expected[i]).epsilon(1e-4).margin(1e-5));
    }
}

// A workspace of exactly `bytes` (so that ASan sees any overrun).
struct Workspace {
    explicit Workspace(size_t bytes) : storage(bytes) {}
    std::vector<unsigned char> storage;
    void* data() { return storage.empty() ? nullptr : storage.data(); }
    size_t bytes() const { return storage.size(); }
};

// The workspace a test passes: what conv2d_workspace_bytes asks for, one
// sample's worth (one im2col chunk per sample), or more than asked (a model
// shares one workspace sized for its hungriest layer).
enum class WorkspaceSize { asked, one_sample, oversized };

using gputrain::CpuConvPath;
// The CPU convolution paths this build has: im2col + OpenBLAS, and oneDNN.
std::vector<CpuConvPath> conv_paths() {
    if (gputrain::have_onednn()) return {CpuConvPath::im2col, CpuConvPath::onednn};
    return {CpuConvPath::im2col};
}
const char* path_name(CpuConvPath p) { return p == CpuConvPath::onednn ? "onednn" : "im2col"; }

void check_conv(const ConvCase& c, uint32_t seed, WorkspaceSize workspace_size,
                CpuConvPath path = CpuConvPath::im2col) {
    const Conv2dGeometry g = geometry_of(c);
    INFO("path " << path_name(path));
    INFO("batch=" << g.batch << " in=" << g.in_h << "x" << g.in_w << "x" << g.in_c << " out=" << g.out_h << "x"
                  << g.out_w << "x" << g.out_c << " kernel=" << g.kernel_h << "x" << g.kernel_w << " stride="
                  << g.stride_h << "," << g.stride_w << " dilation=" << g.dilation_h << "," << g.dilation_w
                  << " pad top/bottom/left/right=" << g.pad_top << "/" << g.pad_bottom() << "/" << g.pad_left << "/"
                  << g.pad_right() << " workspace=" << static_cast<int>(workspace_size));
    // The case states its padding; the geometry must imply the same.
    REQUIRE(g.pad_bottom() == c.pad_bottom);
    REQUIRE(g.pad_right() == c.pad_right);

    std::mt19937 rng(seed);
    const auto x = random_vector(x_size(g), rng);
    const auto w = random_vector(w_size(g), rng);
    const auto dy = random_vector(y_size(g), rng);

    std::vector<double> y_ref(y_size(g), 0.0), dx_ref(x_size(g), 0.0), dw_ref(w_size(g), 0.0);
    for_each_tap(g, [&](size_t xi, size_t yi, size_t wi) {
        y_ref[yi] += static_cast<double>(x[xi]) * w[wi];
        dx_ref[xi] += static_cast<double>(dy[yi]) * w[wi];
        dw_ref[wi] += static_cast<double>(dy[yi]) * x[xi];
    });

    CpuBackend be;
    be.set_conv_path(path);
    // oneDNN takes every shape here (it then needs no workspace) but those
    // whose last window stops short of the input's end (onednn_conv.cpp).
    if (path == CpuConvPath::onednn)
        REQUIRE((be.conv2d_workspace_bytes(g) == 0) == (g.pad_bottom() >= 0 && g.pad_right() >= 0));
    Conv2dGeometry sizing = g;
    if (workspace_size == WorkspaceSize::one_sample) sizing.batch = 1;
    Workspace ws(be.conv2d_workspace_bytes(sizing) * (workspace_size == WorkspaceSize::oversized ? 4 : 1) +
                 (workspace_size == WorkspaceSize::oversized ? 12 : 0));

    const float nan = std::numeric_limits<float>::quiet_NaN();  // outputs must be overwritten, not accumulated
    std::vector<float> y(y_size(g), nan), dx(x_size(g), nan), dw(w_size(g), nan);
    be.conv2d_forward(g, x.data(), w.data(), y.data(), ws.data(), ws.bytes());
    require_close(y, y_ref, "y");
    be.conv2d_backward_data(g, dy.data(), w.data(), dx.data(), ws.data(), ws.bytes());
    require_close(dx, dx_ref, "dx");
    be.conv2d_backward_filter(g, x.data(), dy.data(), dw.data(), ws.data(), ws.bytes());
    require_close(dw, dw_ref, "dw");
}

// b, in_h, in_w, in_c, out_c, kh, kw, stride h/w, dilation h/w, pad top/bottom/left/right
const ConvCase kCases[] = {
    {1, 7, 5, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     // 'same', single channel in and out
    {3, 7, 5, 3, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     // 'same', several channels
    {3, 7, 5, 3, 5, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0},     // 'valid'
    {3, 8, 6, 3, 5, 3, 3, 2, 2, 1, 1, 0, 1, 0, 1},     // Keras 'same' at stride 2: odd pixel bottom/right
    {3, 6, 7, 3, 5, 2, 3, 1, 1, 1, 1, 0, 1, 1, 1},     // 2x3 kernel, asymmetric rows
    {1, 9, 9, 3, 5, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},     // dilation 2, 'same'
    {3, 7, 5, 3, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},     // 1x1 pointwise (no im2col)
    {3, 7, 5, 3, 5, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},     // 1x1 at stride 2
    {1, 3, 5, 3, 5, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1},     // 1x1 with padding: border outputs see only padding
    {3, 7, 9, 1, 5, 3, 3, 2, 2, 2, 2, 0, 0, 0, 0},     // stride 2 and dilation 2, valid
    {3, 5, 6, 3, 1, 2, 3, 2, 2, 1, 1, 1, 2, 0, 1},     // 2x3 kernel, stride 2, pad_bottom = pad_top + 1
    {3, 9, 7, 1, 5, 3, 2, 1, 2, 1, 1, 1, 2, 0, 1},     // mixed strides, asymmetric
    {3, 7, 7, 16, 5, 3, 3, 1, 1, 2, 2, 2, 3, 2, 3},    // dilated taps with wide channel runs
    {3, 8, 8, 3, 5, 3, 3, 2, 2, 1, 1, 0, -1, 0, -1},   // 'valid' at stride 2: the last input row and column unread
    {4, 8, 8, 4, 6, 1, 1, 2, 2, 1, 1, 0, -1, 0, -1},   // the same at 1x1: a ResNet projection shortcut
    {16, 8, 8, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // 4 channels in and out (oneDNN pads them to its blocks)
    {32, 8, 8, 1, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // tiny_resnet's stem at its batch
    {32, 8, 8, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // its basic block
    {32, 8, 8, 4, 6, 3, 3, 2, 2, 1, 1, 0, 1, 0, 1},    // its stride-2 conv
    {32, 4, 4, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // and the conv after it
    {24, 8, 8, 1, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // the same at the last batch of 24
    {24, 8, 8, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {24, 8, 8, 4, 6, 3, 3, 2, 2, 1, 1, 0, 1, 0, 1},
    {24, 4, 4, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {2, 6, 6, 32, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   // 'same' with channel counts oneDNN blocks by 8
};

}  // namespace

TEST_CASE("conv2d forward, backward data and backward filter match direct loops") {
    const WorkspaceSize workspace_size =
        GENERATE(WorkspaceSize::asked, WorkspaceSize::one_sample, WorkspaceSize::oversized);
    uint32_t seed = 11;
    for (const ConvCase& c : kCases) check_conv(c, seed++, workspace_size);
}

TEST_CASE("conv2d through oneDNN matches direct loops") {
    if (!gputrain::have_onednn()) {
        WARN("this build has no oneDNN: nothing to check");
        return;
    }
    uint32_t seed = 41;
    for (const ConvCase& c : kCases) check_conv(c, seed++, WorkspaceSize::asked, CpuConvPath::onednn);
}

TEST_CASE("conv2d backward passes are the adjoints of the forward pass") {
    // <dy, conv(x, w)> = <backward_data(dy), x> = <backward_filter(x, dy), w>:
    // a property of the pair of calls, independent of any reference loops.
    const ConvCase c{3, 8, 7, 3, 5, 3, 3, 2, 1, 1, 2, 0, 1, 2, 2};
    const Conv2dGeometry g = geometry_of(c);
    std::mt19937 rng(5);
    const auto x = random_vector(x_size(g), rng);
    const auto w = random_vector(w_size(g), rng);
    const auto dy = random_vector(y_size(g), rng);
    const CpuConvPath path = GENERATE(from_range(conv_paths()));
    INFO("path " << path_name(path));
    CpuBackend be;
    be.set_conv_path(path);
    Workspace ws(be.conv2d_workspace_bytes(g));
    std::vector<float> y(y_size(g)), dx(x_size(g)), dw(w_size(g));
    be.conv2d_forward(g, x.data(), w.data(), y.data(), ws.data(), ws.bytes());
    be.conv2d_backward_data(g, dy.data(), w.data(), dx.data(), ws.data(), ws.bytes());
    be.conv2d_backward_filter(g, x.data(), dy.data(), dw.data(), ws.data(), ws.bytes());
    double dy_y = 0.0, dx_x = 0.0, dw_w = 0.0;
    for (size_t i = 0; i < y.size(); ++i) dy_y += static_cast<double>(dy[i]) * y[i];
    for (size_t i = 0; i < x.size(); ++i) dx_x += static_cast<double>(dx[i]) * x[i];
    for (size_t i = 0; i < w.size(); ++i) dw_w += static_cast<double>(dw[i]) * w[i];
    REQUIRE(dx_x == Approx(dy_y).epsilon(1e-5));
    REQUIRE(dw_w == Approx(dy_y).epsilon(1e-5));
}

TEST_CASE("conv2d sizes its workspace for the batch and runs smaller batches in it") {
    CpuBackend be;
    be.set_conv_path(CpuConvPath::im2col);  // oneDNN needs none
    const ConvCase c{3, 7, 5, 3, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    Conv2dGeometry g = geometry_of(c);
    // im2col needs out_h * out_w rows of kernel_h * kernel_w * in_c floats per sample.
    REQUIRE(be.conv2d_workspace_bytes(g) == size_t{3} * 7 * 5 * 3 * 3 * 3 * sizeof(float));
    Conv2dGeometry pointwise = g;
    pointwise.kernel_h = pointwise.kernel_w = 1;
    pointwise.pad_top = pointwise.pad_left = 0;
    REQUIRE(be.conv2d_workspace_bytes(pointwise) == 0);

    SECTION("a large batch gets whole samples' columns, not necessarily the whole batch's") {
        Conv2dGeometry big = g;
        big.batch = 64, big.in_h = big.out_h = 28, big.in_w = big.out_w = 28, big.in_c = 32;
        const size_t per_sample = size_t{28} * 28 * 3 * 3 * 32 * sizeof(float);
        const size_t bytes = be.conv2d_workspace_bytes(big);
        REQUIRE(bytes >= per_sample);
        REQUIRE(bytes % per_sample == 0);
        REQUIRE(bytes <= 64 * per_sample);
    }
    SECTION("a batch of 2 in a workspace sized for 3") {
        std::mt19937 rng(3);
        const auto x = random_vector(x_size(g), rng);
        const auto w = random_vector(w_size(g), rng);
        Workspace ws(be.conv2d_workspace_bytes(g));
        std::vector<float> y_full(y_size(g));
        be.conv2d_forward(g, x.data(), w.data(), y_full.data(), ws.data(), ws.bytes());
        Conv2dGeometry two = g;
        two.batch = 2;
        std::vector<float> y_two(y_size(two));
        be.conv2d_forward(two, x.data(), w.data(), y_two.data(), ws.data(), ws.bytes());
        // Against the definition, not bit for bit against the batch of 3: the
        // GEMM library may pick another kernel for another row count (OpenBLAS
        // 0.3.21 on an AVX-512 core rounds these 70 and 105 rows differently).
        std::vector<double> y_ref(y_size(two), 0.0);
        for_each_tap(two, [&](size_t xi, size_t yi, size_t wi) { y_ref[yi] += static_cast<double>(x[xi]) * w[wi]; });
        require_close(y_two, y_ref, "y of the batch of 2");
        for (size_t i = 0; i < y_two.size(); ++i) REQUIRE(y_two[i] == Approx(y_full[i]).epsilon(1e-5).margin(1e-6));
    }
    SECTION("an empty batch needs no workspace and zeroes dw") {
        Conv2dGeometry empty = g;
        empty.batch = 0;
        std::vector<float> w(w_size(g), 1.0f), dw(w_size(g), 1.0f);
        be.conv2d_forward(empty, nullptr, w.data(), nullptr, nullptr, 0);
        be.conv2d_backward_data(empty, nullptr, w.data(), nullptr, nullptr, 0);
        be.conv2d_backward_filter(empty, nullptr, nullptr, dw.data(), nullptr, 0);
        REQUIRE(dw == std::vector<float>(w_size(g), 0.0f));
    }
    SECTION("a workspace smaller than one sample is refused with the sizes") {
        std::vector<float> x(x_size(g)), w(w_size(g)), y(y_size(g));
        std::vector<unsigned char> ws(100);
        REQUIRE_THROWS_AS(be.conv2d_forward(g, x.data(), w.data(), y.data(), ws.data(), ws.size()), gputrain::Error);
        REQUIRE_THROWS_WITH(be.conv2d_forward(g, x.data(), w.data(), y.data(), ws.data(), ws.size()),
                            "conv2d: workspace of 100 bytes is smaller than one sample's 3780 (size it with "
                            "conv2d_workspace_bytes)");
    }
}
