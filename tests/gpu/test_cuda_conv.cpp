// cuDNN convolutions (CudaBackend) against CpuBackend's im2col + GEMM on
// awkward geometries: Keras 'same' padding with the odd pixel at the bottom/
// right (asymmetric, which cuDNN does not do natively), 'valid' with unused
// trailing rows, stride 2, dilation 2, even kernels, batch 1, one channel.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "parity.hpp"

using namespace gpu_test;
using Catch::Matchers::Contains;
using gputrain::Conv2dGeometry;

namespace {

// Keras 'same' (out = ceil(in / stride), the odd padding pixel at the end) or
// 'valid' (no padding, windows that do not fit are dropped).
Conv2dGeometry keras_conv(int batch, int in_h, int in_w, int in_c, int out_c, int kernel_h, int kernel_w,
                          int stride_h, int stride_w, int dilation_h, int dilation_w, bool same) {
    Conv2dGeometry g;
    g.batch = batch;
    g.in_h = in_h;
    g.in_w = in_w;
    g.in_c = in_c;
    g.out_c = out_c;
    g.kernel_h = kernel_h;
    g.kernel_w = kernel_w;
    g.stride_h = stride_h;
    g.stride_w = stride_w;
    g.dilation_h = dilation_h;
    g.dilation_w = dilation_w;
    const int span_h = dilation_h * (kernel_h - 1) + 1, span_w = dilation_w * (kernel_w - 1) + 1;
    if (same) {
        g.out_h = (in_h + stride_h - 1) / stride_h;
        g.out_w = (in_w + stride_w - 1) / stride_w;
        g.pad_top = std::max((g.out_h - 1) * stride_h + span_h - in_h, 0) / 2;
        g.pad_left = std::max((g.out_w - 1) * stride_w + span_w - in_w, 0) / 2;
    } else {
        g.out_h = (in_h - span_h) / stride_h + 1;
        g.out_w = (in_w - span_w) / stride_w + 1;
    }
    return g;
}

std::string describe(const Conv2dGeometry& g) {
    return std::to_string(g.batch) + "x" + std::to_string(g.in_h) + "x" + std::to_string(g.in_w) + "x" +
           std::to_string(g.in_c) + " -> " + std::to_string(g.out_h) + "x" + std::to_string(g.out_w) + "x" +
           std::to_string(g.out_c) + " kernel " + std::to_string(g.kernel_h) + "x" + std::to_string(g.kernel_w) +
           " stride " + std::to_string(g.stride_h) + "x" + std::to_string(g.stride_w) + " dilation " +
           std::to_string(g.dilation_h) + "x" + std::to_string(g.dilation_w) + " pad top/left/bottom/right " +
           std::to_string(g.pad_top) + "/" + std::to_string(g.pad_left) + "/" + std::to_string(g.pad_bottom()) + "/" +
           std::to_string(g.pad_right());
}

size_t input_size(const Conv2dGeometry& g) { return static_cast<size_t>(g.batch) * g.in_h * g.in_w * g.in_c; }
size_t output_size(const Conv2dGeometry& g) { return static_cast<size_t>(g.batch) * g.out_h * g.out_w * g.out_c; }
size_t filter_size(const Conv2dGeometry& g) {
    return static_cast<size_t>(g.out_c) * g.kernel_h * g.kernel_w * g.in_c;
}

struct ConvResults {
    std::vector<float> y, dx, dw;
};

// Forward, backward data and backward filter of `g` on `be`, with a workspace
// sized for `sized_for` (the same geometry with at least as many samples).
// The outputs start as garbage: the calls must overwrite them.
ConvResults run_conv(Backend& be, const Conv2dGeometry& g, const Conv2dGeometry& sized_for, uint32_t seed) {
    Buffers buf(be);
    const float* x = buf.upload(random_vector(input_size(g), seed));
    const float* w = buf.upload(random_vector(filter_size(g), seed + 1));
    const float* dy = buf.upload(random_vector(output_size(g), seed + 2));
    const size_t workspace_bytes = be.conv2d_workspace_bytes(sized_for);
    void* workspace = buf.zeros<char>(std::max<size_t>(workspace_bytes, 1));
    float* y = buf.upload(std::vector<float>(output_size(g), 123.0f));
    float* dx = buf.upload(std::vector<float>(input_size(g), 123.0f));
    float* dw = buf.upload(std::vector<float>(filter_size(g), 123.0f));
    be.conv2d_forward(g, x, w, y, workspace, workspace_bytes);
    be.conv2d_backward_data(g, dy, w, dx, workspace, workspace_bytes);
    be.conv2d_backward_filter(g, x, dy, dw, workspace, workspace_bytes);
    return {buf.download(y, output_size(g)), buf.download(dx, input_size(g)), buf.download(dw, filter_size(g))};
}

// Plain FP32 sums of `terms` products of numbers in [-1, 1] in a different
// order: the error grows with the number of terms. TF32 (~1e-3 relative per
// product) would not pass.
void require_conv_close(const ConvResults& gpu, const ConvResults& cpu, const Conv2dGeometry& g) {
    const double forward_terms = static_cast<double>(g.kernel_h) * g.kernel_w * g.in_c;
    const double data_terms = static_cast<double>(g.kernel_h) * g.kernel_w * g.out_c;
    const double filter_terms = static_cast<double>(g.batch) * g.out_h * g.out_w;
    {
        INFO("forward");
        require_close(gpu.y, cpu.y, 1e-4, 1e-6 * forward_terms);
    }
    {
        INFO("backward data");
        require_close(gpu.dx, cpu.dx, 1e-4, 1e-6 * data_terms);
    }
    {
        INFO("backward filter");
        require_close(gpu.dw, cpu.dw, 1e-4, 1e-6 * filter_terms);
    }
}

void check_conv(const Conv2dGeometry& g) {
    INFO(describe(g));
    CpuBackend cpu;
    CudaBackend gpu(0);
    const uint32_t seed = static_cast<uint32_t>(g.in_h * 131 + g.in_w * 17 + g.in_c * 7 + g.out_c);
    require_conv_close(run_conv(gpu, g, g, seed), run_conv(cpu, g, g, seed), g);
}

}  // namespace

TEST_CASE("conv2d 'same' with symmetric padding (3x3, stride 1) matches the CPU") {
    check_conv(keras_conv(2, 7, 9, 3, 5, 3, 3, 1, 1, 1, 1, true));
}

TEST_CASE("conv2d 'same' with the odd padding pixel at the bottom/right matches the CPU") {
    // Stride 2 on an even input: pad top/left 0, bottom/right 1.
    check_conv(keras_conv(2, 8, 10, 3, 4, 3, 3, 2, 2, 1, 1, true));
    // Even kernels: pad top/left 1, bottom/right 2.
    check_conv(keras_conv(3, 7, 6, 2, 5, 4, 4, 1, 1, 1, 1, true));
    // Different on each axis: asymmetric in height only.
    check_conv(keras_conv(2, 10, 9, 3, 4, 2, 3, 1, 1, 1, 1, true));
}

TEST_CASE("conv2d 'valid' with stride 2 and unused trailing rows/columns matches the CPU") {
    check_conv(keras_conv(2, 8, 9, 3, 6, 3, 3, 2, 2, 1, 1, false));  // bottom/right padding -1 and 0
    check_conv(keras_conv(2, 11, 12, 4, 3, 5, 2, 3, 2, 1, 1, false));
}

TEST_CASE("conv2d with dilation 2 matches the CPU (valid and same, with stride 2)") {
    check_conv(keras_conv(2, 11, 10, 3, 4, 3, 3, 1, 1, 2, 2, false));
    check_conv(keras_conv(2, 9, 12, 3, 4, 3, 2, 2, 1, 2, 2, true));
    check_conv(keras_conv(1, 13, 13, 2, 3, 3, 3, 2, 2, 2, 1, true));
}

TEST_CASE("conv2d with batch 1, one channel, 1x1 kernels matches the CPU") {
    check_conv(keras_conv(1, 5, 7, 1, 1, 3, 3, 1, 1, 1, 1, true));
    check_conv(keras_conv(1, 6, 6, 1, 7, 1, 1, 1, 1, 1, 1, false));
    check_conv(keras_conv(1, 6, 5, 9, 1, 1, 1, 2, 2, 1, 1, true));
    check_conv(keras_conv(1, 3, 3, 2, 2, 3, 3, 1, 1, 1, 1, false));  // one output pixel
}

TEST_CASE("conv2d with more padding on top/left than at the bottom/right matches the CPU") {
    // pad_top 2, pad_bottom 0 at stride 1: cuDNN would pad the bottom by 2
    // too, so it runs unpadded on a copy with the top rows in it.
    Conv2dGeometry g = keras_conv(2, 6, 6, 3, 4, 3, 3, 1, 1, 1, 1, false);
    g.pad_top = 2;
    g.pad_left = 1;
    g.out_h = 6;  // (6 - 1) + 3 - 6 - 2 = 0 at the bottom
    g.out_w = 5;  // (5 - 1) + 3 - 6 - 1 = 0 at the right
    REQUIRE(g.pad_bottom() == 0);
    REQUIRE(g.pad_right() == 0);
    check_conv(g);
    // Padding on top and an unused last row (bottom -1): the copy also drops that row.
    Conv2dGeometry h = keras_conv(2, 8, 7, 2, 3, 3, 3, 1, 1, 1, 1, false);
    h.pad_top = 2;
    h.out_h = 7;  // (7 - 1) + 3 - 8 - 2 = -1
    REQUIRE(h.pad_bottom() == -1);
    check_conv(h);
}

TEST_CASE("conv2d at the Fashion-MNIST CNN's shapes matches the CPU") {
    check_conv(keras_conv(16, 28, 28, 1, 32, 3, 3, 1, 1, 1, 1, true));
    check_conv(keras_conv(16, 14, 14, 32, 64, 3, 3, 1, 1, 1, 1, true));
    check_conv(keras_conv(16, 14, 14, 32, 64, 3, 3, 2, 2, 1, 1, true));
}

TEST_CASE("conv2d's filter gradient by GEMM over the input's columns (a first layer at batch 512) matches the CPU, "
          "the same on every run") {
    // 1 input channel, 3x3: a filter row of 9, the GEMM path (cudnn_convolution.hpp).
    const Conv2dGeometry g = keras_conv(512, 28, 28, 1, 32, 3, 3, 1, 1, 1, 1, true);
    INFO(describe(g));
    CpuBackend cpu;
    CudaBackend gpu(0);
    const ConvResults first = run_conv(gpu, g, g, 11);
    require_conv_close(first, run_conv(cpu, g, g, 11), g);
    require_identical(run_conv(gpu, g, g, 11).dw, first.dw);
}

TEST_CASE("conv2d under training.precision tf32/bf16 runs on TF32 tensor cores, close to the CPU") {
    // TF32 keeps 10 of fp32's 23 mantissa bits: each product of numbers in
    // [-1, 1] is off by up to about 1e-3, and a sum of n of them drifts like
    // sqrt(n); 4e-3 * sqrt(n) is many times that, and far below what a wrong
    // layout or padding gives (errors the size of the values). What this
    // checks is that algorithms are found and set up right with tensor ops
    // allowed, not TF32's accuracy.
    const Precision precision = GENERATE(Precision::tf32, Precision::bf16);
    for (const Conv2dGeometry& g : {keras_conv(16, 28, 28, 1, 32, 3, 3, 1, 1, 1, 1, true),
                                    keras_conv(16, 14, 14, 32, 64, 3, 3, 1, 1, 1, 1, true),
                                    keras_conv(2, 8, 10, 3, 4, 3, 3, 2, 2, 1, 1, true)}) {
        INFO(describe(g));
        CpuBackend cpu;
        CudaBackend gpu(0);
        gpu.set_precision(precision);
        const ConvResults fast = run_conv(gpu, g, g, 5), exact = run_conv(cpu, g, g, 5);
        const auto tolerance = [](double terms) { return 4e-3 * std::sqrt(terms); };
        require_close(fast.y, exact.y, 1e-2, tolerance(g.kernel_h * g.kernel_w * g.in_c));
        require_close(fast.dx, exact.dx, 1e-2, tolerance(g.kernel_h * g.kernel_w * g.out_c));
        require_close(fast.dw, exact.dw, 1e-2, tolerance(g.batch * g.out_h * g.out_w));
        // And back to FP32 on the same backend: the plans are made again, exact as before.
        gpu.set_precision(Precision::fp32);
        require_conv_close(run_conv(gpu, g, g, 5), exact, g);
    }
}

TEST_CASE("conv2d with training.deterministic false (any algorithm cuDNN ranks first) matches the CPU") {
    for (const Conv2dGeometry& g : {keras_conv(16, 28, 28, 1, 32, 3, 3, 1, 1, 1, 1, true),
                                    keras_conv(64, 14, 14, 32, 64, 3, 3, 1, 1, 1, 1, true),
                                    keras_conv(2, 8, 10, 3, 4, 3, 3, 2, 2, 1, 1, true)}) {
        INFO(describe(g));
        CpuBackend cpu;
        CudaBackend gpu(0);
        gpu.set_deterministic(false);
        const ConvResults exact = run_conv(cpu, g, g, 9);
        require_conv_close(run_conv(gpu, g, g, 9), exact, g);
        // Back to deterministic algorithms on the same backend: plans made again, as close.
        gpu.set_deterministic(true);
        require_conv_close(run_conv(gpu, g, g, 9), exact, g);
    }
}

TEST_CASE("conv2d with a workspace sized for the full batch runs the last, shorter batch") {
    const Conv2dGeometry full = keras_conv(8, 8, 10, 3, 4, 3, 3, 2, 2, 1, 1, true);
    Conv2dGeometry last = full;
    last.batch = 3;
    INFO(describe(last));
    CpuBackend cpu;
    CudaBackend gpu(0);
    // Full batch first, as training does, then the short one with the same workspace size.
    require_conv_close(run_conv(gpu, full, full, 5), run_conv(cpu, full, full, 5), full);
    require_conv_close(run_conv(gpu, last, full, 6), run_conv(cpu, last, full, 6), last);
}

TEST_CASE("conv2d results are the same on every run (deterministic algorithms)") {
    const Conv2dGeometry g = keras_conv(4, 9, 9, 5, 6, 3, 3, 1, 1, 1, 1, true);
    CudaBackend gpu(0);
    const ConvResults first = run_conv(gpu, g, g, 9);
    const ConvResults second = run_conv(gpu, g, g, 9);
    require_identical(second.y, first.y);
    require_identical(second.dx, first.dx);
    require_identical(second.dw, first.dw);
}

TEST_CASE("conv2d with a workspace smaller than conv2d_workspace_bytes throws an Error saying so") {
    // Asymmetric padding: the zero-extended input copy alone needs workspace.
    const Conv2dGeometry g = keras_conv(2, 8, 8, 3, 4, 3, 3, 2, 2, 1, 1, true);
    CudaBackend gpu(0);
    Buffers buf(gpu);
    const size_t needed = gpu.conv2d_workspace_bytes(g);
    REQUIRE(needed >= 2u * 9 * 9 * 3 * sizeof(float));
    void* workspace = buf.zeros<char>(needed);
    const float* x = buf.zeros<float>(input_size(g));
    const float* w = buf.zeros<float>(filter_size(g));
    float* y = buf.zeros<float>(output_size(g));
    REQUIRE_THROWS_AS(gpu.conv2d_forward(g, x, w, y, workspace, needed - 1), gputrain::Error);
    REQUIRE_THROWS_WITH(gpu.conv2d_forward(g, x, w, y, workspace, needed - 1),
                        Contains("cuda:0: conv2d 2x8x8x3 -> 4x4x4") &&
                            Contains("workspace of " + std::to_string(needed - 1) + " bytes given, " +
                                     std::to_string(needed) + " needed (size it with conv2d_workspace_bytes)"));
    gpu.conv2d_forward(g, x, w, y, workspace, needed);  // and with enough it runs
    gpu.synchronize();
}

TEST_CASE("conv2d backward filter with no samples writes a zero gradient") {
    Conv2dGeometry g = keras_conv(0, 5, 5, 2, 3, 3, 3, 1, 1, 1, 1, true);
    CudaBackend gpu(0);
    Buffers buf(gpu);
    REQUIRE(gpu.conv2d_workspace_bytes(g) == 0);
    float* dw = buf.upload(std::vector<float>(filter_size(g), 5.0f));
    const float* any = buf.zeros<float>(1);
    gpu.conv2d_backward_filter(g, any, any, dw, nullptr, 0);
    REQUIRE(buf.download(dw, filter_size(g)) == std::vector<float>(filter_size(g), 0.0f));
}

TEST_CASE("CUDNN_CHECK throws an Error naming the device, the call and cuDNN's status") {
    const auto failing_cudnn_call = [] { CUDNN_CHECK(1, cudnnCreateTensorDescriptor(nullptr)); };
    REQUIRE_THROWS_AS(failing_cudnn_call(), gputrain::Error);
    REQUIRE_THROWS_WITH(failing_cudnn_call(), Contains("cuda:1: cudnnCreateTensorDescriptor(...) failed: CUDNN_STATUS_"));
}
