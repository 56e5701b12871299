// Pooling kernels (CudaBackend) against CpuBackend, bit for bit: max and
// average, Keras 'same' padding with the odd pixel at the bottom/right,
// overlapping windows, windows entirely in the padding, and ties (max pooling
// routes each gradient to the first maximum of its window).
#include <algorithm>
#include <cmath>
#include <string>

#include "parity.hpp"

using namespace gpu_test;
using gputrain::Pool2dGeometry;
using gputrain::PoolMode;

namespace {

Pool2dGeometry keras_pool(PoolMode mode, int batch, int in_h, int in_w, int channels, int pool_h, int pool_w,
                          int stride_h, int stride_w, bool same) {
    Pool2dGeometry g;
    g.mode = mode;
    g.batch = batch;
    g.in_h = in_h;
    g.in_w = in_w;
    g.channels = channels;
    g.pool_h = pool_h;
    g.pool_w = pool_w;
    g.stride_h = stride_h;
    g.stride_w = stride_w;
    if (same) {
        g.out_h = (in_h + stride_h - 1) / stride_h;
        g.out_w = (in_w + stride_w - 1) / stride_w;
        g.pad_top = std::max((g.out_h - 1) * stride_h + pool_h - in_h, 0) / 2;
        g.pad_left = std::max((g.out_w - 1) * stride_w + pool_w - in_w, 0) / 2;
    } else {
        g.out_h = (in_h - pool_h) / stride_h + 1;
        g.out_w = (in_w - pool_w) / stride_w + 1;
    }
    return g;
}

std::string describe(const Pool2dGeometry& g) {
    return std::string(g.mode == PoolMode::max ? "max " : "average ") + std::to_string(g.batch) + "x" +
           std::to_string(g.in_h) + "x" + std::to_string(g.in_w) + "x" + std::to_string(g.channels) + " -> " +
           std::to_string(g.out_h) + "x" + std::to_string(g.out_w) + " pool " + std::to_string(g.pool_h) + "x" +
           std::to_string(g.pool_w) + " stride " + std::to_string(g.stride_h) + "x" + std::to_string(g.stride_w) +
           " pad top/left/bottom/right " + std::to_string(g.pad_top) + "/" + std::to_string(g.pad_left) + "/" +
           std::to_string(g.pad_bottom()) + "/" + std::to_string(g.pad_right());
}

size_t input_size(const Pool2dGeometry& g) { return static_cast<size_t>(g.batch) * g.in_h * g.in_w * g.channels; }
size_t output_size(const Pool2dGeometry& g) {
    return static_cast<size_t>(g.batch) * g.out_h * g.out_w * g.channels;
}

// Inputs drawn from {-1, 0, 1, 2}: most windows hold several equal maxima.
std::vector<float> tied_values(size_t n, uint32_t seed) {
    auto v = random_vector(n, seed, -1.0f, 3.0f);
    for (auto& e : v) e = std::floor(e);
    return v;
}

// y and dx (outputs start as garbage: both must be overwritten), concatenated.
std::vector<float> run_pool(Backend& be, const Pool2dGeometry& g, const std::vector<float>& x_host, uint32_t seed) {
    Buffers buf(be);
    const float* x = buf.upload(x_host);
    const float* dy = buf.upload(random_vector(output_size(g), seed));
    float* y = buf.upload(std::vector<float>(output_size(g), 123.0f));
    float* dx = buf.upload(std::vector<float>(input_size(g), 123.0f));
    be.pool2d_forward(g, x, y);
    be.pool2d_backward(g, x, y, dy, dx);
    auto out = buf.download(y, output_size(g));
    const auto grad = buf.download(dx, input_size(g));
    out.insert(out.end(), grad.begin(), grad.end());
    return out;
}

void check_pool(const Pool2dGeometry& g) {
    INFO(describe(g));
    CpuBackend cpu;
    CudaBackend gpu(0);
    const uint32_t seed = static_cast<uint32_t>(g.in_h * 131 + g.in_w * 17 + g.channels);
    const auto smooth = random_vector(input_size(g), seed);
    require_identical(run_pool(gpu, g, smooth, seed + 1), run_pool(cpu, g, smooth, seed + 1));
    const auto tied = tied_values(input_size(g), seed + 2);
    require_identical(run_pool(gpu, g, tied, seed + 3), run_pool(cpu, g, tied, seed + 3));
}

}  // namespace

TEST_CASE("pooling 2x2 stride 2 'valid' (odd input: last row and column unused) is bit-identical to the CPU") {
    const PoolMode mode = GENERATE(PoolMode::max, PoolMode::average);
    check_pool(keras_pool(mode, 2, 7, 7, 3, 2, 2, 2, 2, false));
    check_pool(keras_pool(mode, 3, 28, 28, 32, 2, 2, 2, 2, false));
}

TEST_CASE("pooling 'same' with the odd padding pixel at the bottom/right is bit-identical to the CPU") {
    const PoolMode mode = GENERATE(PoolMode::max, PoolMode::average);
    check_pool(keras_pool(mode, 2, 7, 7, 3, 2, 2, 2, 2, true));   // pad bottom/right 1
    check_pool(keras_pool(mode, 2, 8, 9, 5, 3, 3, 2, 2, true));   // pad 0/0/1/1 and 1/1/1/1
    check_pool(keras_pool(mode, 1, 6, 5, 2, 2, 3, 1, 2, true));   // batch 1, different on each axis
}

TEST_CASE("pooling with overlapping windows (3x3 stride 1) is bit-identical to the CPU") {
    const PoolMode mode = GENERATE(PoolMode::max, PoolMode::average);
    check_pool(keras_pool(mode, 2, 6, 6, 33, 3, 3, 1, 1, true));
    check_pool(keras_pool(mode, 2, 9, 8, 4, 3, 2, 2, 1, false));
}

TEST_CASE("pooling 1x1, global and one-channel geometries are bit-identical to the CPU") {
    const PoolMode mode = GENERATE(PoolMode::max, PoolMode::average);
    check_pool(keras_pool(mode, 2, 5, 4, 3, 1, 1, 1, 1, false));
    check_pool(keras_pool(mode, 3, 7, 6, 5, 7, 6, 1, 1, false));  // the whole image
    check_pool(keras_pool(mode, 1, 9, 9, 1, 3, 3, 3, 3, true));
}

TEST_CASE("pooling windows entirely in the padding give 0 and no gradient, as on the CPU") {
    const PoolMode mode = GENERATE(PoolMode::max, PoolMode::average);
    // 1x1 windows, stride 1, one padding row and column on top/left: the
    // first output row and column see no input.
    Pool2dGeometry g = keras_pool(mode, 2, 4, 5, 3, 1, 1, 1, 1, false);
    g.pad_top = 1;
    g.pad_left = 1;
    g.out_h = 5;
    g.out_w = 6;
    REQUIRE(g.pad_bottom() == 0);
    REQUIRE(g.pad_right() == 0);
    check_pool(g);
}

TEST_CASE("max pooling routes the gradient to the first of equal maxima, row-major") {
    // One 2x3 window over [[1, 3, 3], [3, 2, 3]]: the maximum 3 first occurs at (0, 1).
    const Pool2dGeometry g = keras_pool(PoolMode::max, 1, 2, 3, 1, 2, 3, 1, 1, false);
    CudaBackend gpu(0);
    const auto out = run_pool(gpu, g, {1, 3, 3, 3, 2, 3}, 1);
    const float dy = random_vector(1, 1)[0];
    REQUIRE(out == std::vector<float>{3, 0, dy, 0, 0, 0, 0});
}
