// Element-wise and row-wise kernels against CpuBackend on awkward sizes.
#include "backend/ops/elementwise.hpp"
#include "parity.hpp"

using namespace gpu_test;
using gputrain::Activation;
using gputrain::run_op;
namespace ops = gputrain::ops;

namespace {

// Row-major shapes: single elements, single rows and columns, more rows than
// a block has warps, more columns than a warp has lanes.
struct Shape {
    int rows, cols;
};
// The last two: many rows over few columns (a conv layer's bias), which
// column sums split into chunks of rows.
const std::vector<Shape> kShapes{{1, 1},    {7, 1},     {1, 7},      {33, 7},      {1000, 10},
                                 {4097, 3}, {3, 4097}, {129, 785}, {25088, 32}, {70001, 5}};

}  // namespace

TEST_CASE("fill and scale touch exactly n elements") {
    const size_t n = GENERATE(as<size_t>{}, 1, 7, 33, 1000, 4097);
    const auto x = random_vector(n + 1, 1);
    const auto run = [&](Backend& be, bool do_scale) {
        Buffers buf(be);
        float* d = buf.upload(x);
        if (do_scale)
            be.scale(d, n, -1.75f);
        else
            be.fill(d, n, 0.3f);
        return buf.download(d, n + 1);
    };
    CpuBackend cpu;
    CudaBackend gpu(0);
    require_identical(run(gpu, false), run(cpu, false));
    require_identical(run(gpu, true), run(cpu, true));
}

TEST_CASE("multiply matches the CPU exactly") {
    const size_t n = GENERATE(as<size_t>{}, 1, 7, 33, 1000, 4097);
    const auto a = random_vector(n, 2), b = random_vector(n, 3);
    const auto run = [&](Backend& be) {
        Buffers buf(be);
        float* out = buf.zeros<float>(n);
        run_op(be, ops::Multiply{buf.upload(a), buf.upload(b), out, n});
        return buf.download(out, n);
    };
    CpuBackend cpu;
    CudaBackend gpu(0);
    require_identical(run(gpu), run(cpu));
}

TEST_CASE("accumulate and copy_strided match the CPU exactly") {
    const int rows = GENERATE(1, 7, 300), cols = 5, ld = 13;
    const size_t n = static_cast<size_t>(rows) * ld;
    const auto a = random_vector(n, 4), b = random_vector(n, 5);
    const auto run = [&](Backend& be) {
        Buffers buf(be);
        float* y = buf.upload(a);
        run_op(be, ops::Accumulate{y, buf.upload(b), n});
        float* wide = buf.upload(b);
        run_op(be, ops::CopyStrided{wide + 3, ld, y, ld, rows, cols});
        return buf.download(wide, n);
    };
    CpuBackend cpu;
    CudaBackend gpu(0);
    require_identical(run(gpu), run(cpu));
}

TEST_CASE("add_bias and sum_rows match the CPU") {
    CpuBackend cpu;
    CudaBackend gpu(0);
    for (const Shape s : kShapes) {
        INFO(s.rows << " x " << s.cols);
        const size_t n = static_cast<size_t>(s.rows) * s.cols;
        const auto y = random_vector(n, 4), bias = random_vector(static_cast<size_t>(s.cols), 5);
        const auto run_bias = [&](Backend& be) {
            Buffers buf(be);
            float* d = buf.upload(y);
            be.add_bias(d, buf.upload(bias), s.rows, s.cols);
            return buf.download(d, n);
        };
        require_identical(run_bias(gpu), run_bias(cpu));

        const auto run_sum = [&](Backend& be) {
            Buffers buf(be);
            float* db = buf.upload(std::vector<float>(static_cast<size_t>(s.cols), 123.0f));  // overwritten
            be.sum_rows(buf.upload(y), db, s.rows, s.cols);
            return buf.download(db, static_cast<size_t>(s.cols));
        };
        // Different summation orders: the error of a float sum grows with its length.
        require_close(run_sum(gpu), run_sum(cpu), 1e-5, 2e-7 * s.rows);
    }
}

TEST_CASE("activations forward and backward match the CPU") {
    const Activation a = GENERATE(Activation::linear, Activation::relu, Activation::sigmoid, Activation::tanh,
                                  Activation::gelu);
    const size_t n = GENERATE(as<size_t>{}, 1, 7, 33, 1000, 4097);
    INFO(gputrain::activation_name(a) << " n " << n);
    auto x = random_vector(n, 6, -6.0f, 6.0f);
    if (n > 3) {  // the kinks and the tails
        x[0] = 0.0f;
        x[1] = -30.0f;
        x[2] = 30.0f;
    }
    const auto dy = random_vector(n, 7);
    const auto run = [&](Backend& be) {
        Buffers buf(be);
        const float* dx_in = buf.upload(x);
        float* y = buf.zeros<float>(n);
        float* dx = buf.zeros<float>(n);
        be.activation_forward(a, dx_in, y, n);
        be.activation_backward(a, dx_in, y, buf.upload(dy), dx, n);
        auto out = buf.download(y, n);
        const auto grad = buf.download(dx, n);
        out.insert(out.end(), grad.begin(), grad.end());
        return out;
    };
    CpuBackend cpu;
    CudaBackend gpu(0);
    // expf, tanhf and erff may differ by an ulp or two between glibc and CUDA.
    require_close(run(gpu), run(cpu), 1e-5, 1e-6);
}

TEST_CASE("linear activation in place leaves the data as it is") {
    CudaBackend gpu(0);
    Buffers buf(gpu);
    const auto x = random_vector(33, 8);
    float* d = buf.upload(x);
    gpu.activation_forward(Activation::linear, d, d, x.size());
    gpu.activation_backward(Activation::linear, d, d, d, d, x.size());
    REQUIRE(buf.download(d, x.size()) == x);
}

TEST_CASE("softmax forward (also in place) and backward match the CPU") {
    CpuBackend cpu;
    CudaBackend gpu(0);
    for (const Shape s : kShapes) {
        INFO(s.rows << " x " << s.cols);
        const size_t n = static_cast<size_t>(s.rows) * s.cols;
        auto x = random_vector(n, 9, -8.0f, 8.0f);
        // Logits whose exp overflows float: the max is subtracted first.
        for (int c = 0; c < s.cols; ++c) x[c] = 1000.0f - static_cast<float>(c % 5);
        const auto dy = random_vector(n, 10);
        const auto run = [&](Backend& be, bool in_place) {
            Buffers buf(be);
            float* dx_in = buf.upload(x);
            float* y = in_place ? dx_in : buf.zeros<float>(n);
            be.softmax_forward(dx_in, y, s.rows, s.cols);
            float* dx = buf.zeros<float>(n);
            be.softmax_backward(y, buf.upload(dy), dx, s.rows, s.cols);
            return std::make_pair(buf.download(y, n), buf.download(dx, n));
        };
        const auto reference = run(cpu, false);
        for (const bool in_place : {false, true}) {
            INFO("in place " << in_place);
            const auto [y, dx] = run(gpu, in_place);
            require_close(y, reference.first, 1e-5, 1e-7);
            // dx = y * (dy - sum(dy * y)) cancels where dy is near the sum:
            // its error is bounded by the terms' size (|y|, |dy| <= 1), not by
            // dx's, so a few ulps of 1 absolute (seen on an H200: 1.8e-7).
            require_close(dx, reference.second, 1e-5, 1e-6);
        }
    }
}

TEST_CASE("dropout masks and outputs are bit-identical to the CPU") {
    const size_t n = GENERATE(as<size_t>{}, 1, 7, 33, 1000, 4097);
    const float rate = GENERATE(0.0f, 0.25f, 0.5f, 0.9f);
    // A first index past 2^32: the 64-bit index math must not wrap.
    const uint64_t first_index = GENERATE(uint64_t{0}, uint64_t{123456789012345});
    const uint64_t key = 0x5eed0000abcdULL;
    const auto x = random_vector(n, 11);
    const auto run = [&](Backend& be) {
        Buffers buf(be);
        float* y = buf.zeros<float>(n);
        float* mask = buf.zeros<float>(n);
        be.dropout_forward(buf.upload(x), y, mask, n, rate, key, first_index);
        auto out = buf.download(mask, n);
        const auto values = buf.download(y, n);
        out.insert(out.end(), values.begin(), values.end());
        return out;
    };
    CpuBackend cpu;
    CudaBackend gpu(0);
    require_identical(run(gpu), run(cpu));
}

TEST_CASE("size 0 launches nothing and touches nothing") {
    CudaBackend gpu(0);
    Buffers buf(gpu);
    float* x = buf.upload(std::vector<float>{4.0f});
    gpu.fill(x, 0, 1.0f);
    gpu.scale(x, 0, 2.0f);
    run_op(gpu, ops::Multiply{x, x, x, 0});
    run_op(gpu, ops::CopyStrided{x, 1, x, 1, 0, 1});
    gpu.activation_forward(Activation::relu, x, x, 0);
    gpu.dropout_forward(x, x, x, 0, 0.5f, 1, 0);
    gpu.softmax_forward(x, x, 0, 1);
    gpu.add_bias(x, x, 0, 1);
    gpu.adam_step(x, x, x, x, 0, gputrain::math::AdamParams{0.1f, 0.9f, 0.999f, 1e-7f, 0.0f});
    REQUIRE(buf.download(x, 1) == std::vector<float>{4.0f});
}
