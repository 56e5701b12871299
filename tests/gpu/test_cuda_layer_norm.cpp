// layer_norm / rms_norm kernels (backend/ops/normalization.hpp) against the
// CPU's on awkward shapes: forward (y and the row statistics) and backward
// (dx, dgamma, dbeta), with and without gamma/beta, with and without the
// column sums' scratch; and the same bits on a second run.
#include <utility>

#include "backend/ops/normalization.hpp"
#include "parity.hpp"

using namespace gpu_test;
using gputrain::run_op;
namespace ops = gputrain::ops;

namespace {

struct Shape {
    int rows, cols;
};
// Single elements, single rows and columns, more columns than a warp has
// lanes, more rows than the grid has warps (70001 rows: kMaxBlocks * 8 warps
// is 32768), rows of many columns, and many rows over few columns (the
// column sums split into chunks).
const std::vector<Shape> kShapes{{1, 1},     {7, 1},   {1, 7},     {33, 7},    {1000, 10},
                                 {3, 4097}, {129, 785}, {25088, 32}, {70001, 5}, {64, 4096}};

struct Variant {
    bool rms, gamma, beta;
    const char* what;
};
const std::vector<Variant> kVariants{{false, true, true, "layer_norm"},
                                     {false, false, true, "layer_norm, no scale"},
                                     {false, true, false, "layer_norm, no center"},
                                     {false, false, false, "layer_norm, neither"},
                                     {true, true, false, "rms_norm"}};

// Everything the ops write, downloaded in one vector per output.
struct Outputs {
    std::vector<float> y, mean, rstd, dx, dgamma, dbeta;
};

Outputs run(Backend& be, const Shape& s, const Variant& v, const std::vector<float>& x, const std::vector<float>& dy,
            const std::vector<float>& gamma, const std::vector<float>& beta, float epsilon, bool scratch) {
    const size_t n = static_cast<size_t>(s.rows) * s.cols, rows = static_cast<size_t>(s.rows),
                 cols = static_cast<size_t>(s.cols);
    Buffers buf(be);
    const float* d_x = buf.upload(x);
    const float* d_gamma = v.gamma ? buf.upload(gamma) : nullptr;
    const float* d_beta = v.beta ? buf.upload(beta) : nullptr;
    float* y = buf.zeros<float>(n);
    float* mean = buf.zeros<float>(rows);
    float* rstd = buf.zeros<float>(rows);
    run_op(be, ops::LayerNormForward{d_x, d_gamma, d_beta, y, v.rms ? nullptr : mean, rstd, s.rows, s.cols, epsilon,
                                     v.rms});
    // The gradients start as garbage: the op overwrites them.
    float* dx = buf.upload(std::vector<float>(n, 123.0f));
    float* dgamma = buf.upload(std::vector<float>(cols, 123.0f));
    float* dbeta = buf.upload(std::vector<float>(cols, 123.0f));
    const size_t scratch_floats = scratch ? ops::layer_norm_backward_scratch_floats(s.rows, s.cols) : 0;
    float* d_scratch = scratch_floats ? buf.zeros<float>(scratch_floats) : nullptr;
    run_op(be, ops::LayerNormBackward{d_x, buf.upload(dy), v.rms ? nullptr : mean, rstd, d_gamma, dx, dgamma,
                                      v.rms ? nullptr : dbeta, s.rows, s.cols, v.rms, d_scratch, scratch_floats});
    Outputs out;
    out.y = buf.download(y, n);
    out.mean = v.rms ? std::vector<float>{} : buf.download(mean, rows);
    out.rstd = buf.download(rstd, rows);
    out.dx = buf.download(dx, n);
    out.dgamma = buf.download(dgamma, cols);
    out.dbeta = v.rms ? std::vector<float>{} : buf.download(dbeta, cols);
    return out;
}

}  // namespace

TEST_CASE("layer_norm and rms_norm kernels match the CPU") {
    CpuBackend cpu;
    CudaBackend gpu(0);
    for (const Shape s : kShapes) {
        const size_t n = static_cast<size_t>(s.rows) * s.cols;
        auto x = random_vector(n, 1, -2.0f, 3.0f);
        // A row around a large mean (two-pass statistics) and a constant row
        // (variance 0: rstd = 1 / sqrt(epsilon)).
        if (s.rows > 2)
            for (int c = 0; c < s.cols; ++c) {
                x[static_cast<size_t>(c)] += 1000.0f;
                x[static_cast<size_t>(s.cols) + c] = 0.75f;
            }
        const auto dy = random_vector(n, 2);
        const auto gamma = random_vector(static_cast<size_t>(s.cols), 3, 0.5f, 1.5f);
        const auto beta = random_vector(static_cast<size_t>(s.cols), 4);
        for (const Variant& v : kVariants) {
            INFO(v.what << ", " << s.rows << " x " << s.cols);
            const float epsilon = v.rms ? 1e-6f : 1e-5f;
            const Outputs want = run(cpu, s, v, x, dy, gamma, beta, epsilon, false);
            for (const bool scratch : {true, false}) {
                INFO("scratch " << scratch);
                const Outputs got = run(gpu, s, v, x, dy, gamma, beta, epsilon, scratch);
                // The same float expressions on both (no FMA contraction on
                // the GPU); only the double row sums add in another order,
                // which can move rstd by an ulp.
                require_close(got.mean, want.mean, 1e-6, 1e-7);
                require_close(got.rstd, want.rstd, 1e-6, 0.0);
                require_close(got.y, want.y, 1e-5, 1e-6);
                // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) cancels:
                // its error is bounded by rstd times the terms' size (up to
                // 316 for the constant row's rstd).
                require_close(got.dx, want.dx, 1e-5, 1e-5);
                // Column sums in double (in chunks on the GPU), rounded once.
                require_close(got.dgamma, want.dgamma, 1e-6, 1e-6);
                require_close(got.dbeta, want.dbeta, 1e-6, 1e-6);
            }
        }
    }
}

TEST_CASE("layer_norm kernels give the same bits on every run") {
    CudaBackend gpu(0);
    for (const Shape s : {Shape{25088, 32}, Shape{70001, 5}, Shape{129, 785}}) {
        INFO(s.rows << " x " << s.cols);
        const size_t n = static_cast<size_t>(s.rows) * s.cols;
        const auto x = random_vector(n, 5), dy = random_vector(n, 6);
        const auto gamma = random_vector(static_cast<size_t>(s.cols), 7);
        const auto beta = random_vector(static_cast<size_t>(s.cols), 8);
        for (const Variant& v : kVariants) {
            INFO(v.what);
            const Outputs a = run(gpu, s, v, x, dy, gamma, beta, 1e-5f, true);
            const Outputs b = run(gpu, s, v, x, dy, gamma, beta, 1e-5f, true);
            require_identical(a.y, b.y);
            require_identical(a.dx, b.dx);
            require_identical(a.dgamma, b.dgamma);
            require_identical(a.dbeta, b.dbeta);
        }
    }
}

TEST_CASE("layer_norm kernels on 0 rows write zero gradients and touch nothing else") {
    CudaBackend gpu(0);
    Buffers buf(gpu);
    float* x = buf.upload(std::vector<float>{4.0f});
    float* out = buf.upload(std::vector<float>{5.0f, 6.0f, 7.0f});  // y or dx, mean, rstd
    float* grads = buf.upload(std::vector<float>{9.0f, 9.0f});
    run_op(gpu, ops::LayerNormForward{x, nullptr, nullptr, out, out + 1, out + 2, 0, 1, 1e-5f, false});
    run_op(gpu, ops::LayerNormBackward{x, x, out + 1, out + 2, nullptr, out, grads, grads + 1, 0, 1, false, nullptr,
                                       0});
    REQUIRE(buf.download(out, 3) == std::vector<float>{5.0f, 6.0f, 7.0f});
    REQUIRE(buf.download(grads, 2) == std::vector<float>{0.0f, 0.0f});
}
