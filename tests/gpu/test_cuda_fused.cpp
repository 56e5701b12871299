// The fused bias + activation passes on the GPU: against the CPU's, and
// against the GPU's own plain pairs (add_bias + activation_forward,
// activation_backward + sum_rows), which they must equal bit for bit.
#include "parity.hpp"

using namespace gpu_test;
using gputrain::Activation;

namespace {

struct Shape {
    int rows, cols;
};
// Awkward sizes, W1's hidden layer (32 x 128), and a conv layer's output
// (25088 pixels x 32 channels), whose bias gradient is summed in row chunks.
const std::vector<Shape> kShapes{{1, 1}, {7, 1}, {33, 7}, {32, 128}, {3, 4097}, {25088, 32}};

struct Pass {
    std::vector<float> z, y, dz, db;
};

// Forward then backward, fused or as the plain pairs, from the same inputs.
Pass run(Backend& be, Activation a, const Shape& s, bool fused, bool with_bias) {
    const size_t n = static_cast<size_t>(s.rows) * s.cols, cols = static_cast<size_t>(s.cols);
    auto z0 = random_vector(n, 11, -4.0f, 4.0f);
    if (n > 3) z0[0] = 0.0f;  // relu's kink
    const auto bias = random_vector(cols, 12), dy = random_vector(n, 13);
    Buffers buf(be);
    float* z = buf.upload(z0);
    const float* b = with_bias ? buf.upload(bias) : nullptr;
    float* y = buf.zeros<float>(n);
    float* dz = buf.zeros<float>(n);
    float* db = with_bias ? buf.upload(std::vector<float>(cols, 77.0f)) : nullptr;  // overwritten
    const float* d_dy = buf.upload(dy);
    if (fused) {
        be.bias_activation_forward(a, z, b, y, s.rows, s.cols);
        be.activation_bias_backward(a, z, y, d_dy, dz, db, s.rows, s.cols);
    } else {
        if (b) be.add_bias(z, b, s.rows, s.cols);
        be.activation_forward(a, z, y, n);
        be.activation_backward(a, z, y, d_dy, dz, n);
        if (db) be.sum_rows(dz, db, s.rows, s.cols);
    }
    Pass out{buf.download(z, n), buf.download(y, n), buf.download(dz, n), {}};
    if (db) out.db = buf.download(db, cols);
    return out;
}

}  // namespace

TEST_CASE("Fused bias + activation passes equal the GPU's plain pairs bit for bit and match the CPU") {
    const Activation a = GENERATE(Activation::relu, Activation::sigmoid, Activation::tanh, Activation::gelu);
    const bool with_bias = GENERATE(true, false);
    CpuBackend cpu;
    CudaBackend gpu(0);
    for (const Shape& s : kShapes) {
        INFO(gputrain::activation_name(a) << " " << s.rows << " x " << s.cols << (with_bias ? " bias" : " no bias"));
        const Pass fused = run(gpu, a, s, true, with_bias);
        const Pass plain = run(gpu, a, s, false, with_bias);
        require_identical(fused.z, plain.z);
        require_identical(fused.y, plain.y);
        require_identical(fused.dz, plain.dz);
        require_identical(fused.db, plain.db);
        const Pass host = run(cpu, a, s, true, with_bias);
        require_identical(fused.z, host.z);  // one float add per element
        // expf, tanhf and erff may differ by an ulp or two between glibc and CUDA.
        require_close(fused.y, host.y, 1e-5, 1e-6);
        require_close(fused.dz, host.dz, 1e-5, 1e-6);
        // Different summation orders: the error of a float sum grows with its length.
        require_close(fused.db, host.db, 1e-5, 2e-7 * s.rows);
    }
}

TEST_CASE("activation_bias_backward_copy: dz's 16-bit copy and db as the plain pass then gemm_copy, bit for bit") {
    const Precision precision = GENERATE(Precision::bf16, Precision::fp16);
    const Activation a = GENERATE(Activation::relu, Activation::sigmoid, Activation::tanh, Activation::gelu);
    const bool with_bias = GENERATE(true, false);
    CudaBackend gpu(0);
    gpu.set_precision(precision);
    gpu.set_gemm_input_cast(true);
    for (const Shape& s : kShapes) {
        INFO((precision == Precision::bf16 ? "bf16 " : "fp16 ") << gputrain::activation_name(a) << " " << s.rows
                                                                 << " x " << s.cols << (with_bias ? " bias" : ""));
        const size_t n = static_cast<size_t>(s.rows) * s.cols, cols = static_cast<size_t>(s.cols);
        auto z0 = random_vector(n, 21, -4.0f, 4.0f);
        if (n > 3) z0[0] = 0.0f;
        Buffers buf(gpu);
        const float* z = buf.upload(z0);
        float* y = buf.zeros<float>(n);
        gpu.activation_forward(a, z, y, n);
        const float* dy = buf.upload(random_vector(n, 22));
        // The fused pass, with dz marked so that an unwanted write would show.
        float* dz = buf.upload(std::vector<float>(n, 55.0f));
        auto* copy = buf.zeros<uint16_t>(n);
        float* db = with_bias ? buf.upload(std::vector<float>(cols, 77.0f)) : nullptr;
        gpu.activation_bias_backward_copy(a, z, y, dy, dz, copy, db, s.rows, s.cols);
        // The base class's composition of the plain pass and the cast kernel.
        float* plain_dz = buf.zeros<float>(n);
        auto* plain_copy = buf.zeros<uint16_t>(n);
        float* plain_db = with_bias ? buf.zeros<float>(cols) : nullptr;
        gpu.Backend::activation_bias_backward_copy(a, z, y, dy, plain_dz, plain_copy, plain_db, s.rows, s.cols);
        CHECK(buf.download(copy, n) == buf.download(plain_copy, n));
        if (with_bias) require_identical(buf.download(db, cols), buf.download(plain_db, cols));
        CHECK(buf.download(dz, n) == std::vector<float>(n, 55.0f));
    }
}

TEST_CASE("bias_activation_forward in place (z is y) gives the y of the separate pass") {
    const Activation a = GENERATE(Activation::relu, Activation::sigmoid, Activation::tanh, Activation::gelu);
    CudaBackend gpu(0);
    for (const Shape& s : kShapes) {
        INFO(gputrain::activation_name(a) << " " << s.rows << " x " << s.cols);
        const size_t n = static_cast<size_t>(s.rows) * s.cols;
        const auto z0 = random_vector(n, 41, -4.0f, 4.0f);
        Buffers buf(gpu);
        const float* bias = buf.upload(random_vector(static_cast<size_t>(s.cols), 42));
        float* z = buf.upload(z0);
        float* y = buf.zeros<float>(n);
        gpu.bias_activation_forward(a, z, bias, y, s.rows, s.cols);
        float* in_place = buf.upload(z0);
        gpu.bias_activation_forward(a, in_place, bias, in_place, s.rows, s.cols);
        require_identical(buf.download(in_place, n), buf.download(y, n));
    }
}

TEST_CASE("bias_activation_forward_copy: z, y and y's 16-bit copy as the plain pass then gemm_copy, bit for bit") {
    const Precision precision = GENERATE(Precision::bf16, Precision::fp16);
    const Activation a = GENERATE(Activation::relu, Activation::sigmoid, Activation::tanh, Activation::gelu);
    const bool in_place = GENERATE(true, false);  // z is y, as a relu layer runs it
    CudaBackend gpu(0);
    gpu.set_precision(precision);
    gpu.set_gemm_input_cast(true);
    for (const Shape& s : kShapes) {
        INFO((precision == Precision::bf16 ? "bf16 " : "fp16 ") << gputrain::activation_name(a) << " " << s.rows
                                                                 << " x " << s.cols << (in_place ? " in place" : ""));
        const size_t n = static_cast<size_t>(s.rows) * s.cols;
        const auto z0 = random_vector(n, 51, -4.0f, 4.0f);
        Buffers buf(gpu);
        const float* bias = buf.upload(random_vector(static_cast<size_t>(s.cols), 52));
        float* z = buf.upload(z0);
        float* y = in_place ? z : buf.zeros<float>(n);
        auto* copy = buf.zeros<uint16_t>(n);
        gpu.bias_activation_forward_copy(a, z, bias, y, copy, s.rows, s.cols);
        float* plain_z = buf.upload(z0);
        float* plain_y = in_place ? plain_z : buf.zeros<float>(n);
        auto* plain_copy = buf.zeros<uint16_t>(n);
        gpu.Backend::bias_activation_forward_copy(a, plain_z, bias, plain_y, plain_copy, s.rows, s.cols);
        require_identical(buf.download(y, n), buf.download(plain_y, n));
        require_identical(buf.download(z, n), buf.download(plain_z, n));
        CHECK(buf.download(copy, n) == buf.download(plain_copy, n));
    }
}
