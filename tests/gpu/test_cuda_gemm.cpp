// cuBLAS GEMM through the row-major/column-major swap against OpenBLAS.
#include <algorithm>
#include <cmath>
#include <random>

#include "parity.hpp"

using namespace gpu_test;

namespace {

constexpr float kPad = -777.0f;  // in the columns beyond each matrix's width: must come back untouched

struct GemmCase {
    bool trans_a, trans_b;
    int m, n, k;
    int pad_a, pad_b, pad_c;  // ld = width + pad
    float alpha, beta;
};

std::vector<float> padded_matrix(int rows, int width, int pad, std::mt19937& rng) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> out(static_cast<size_t>(rows) * (width + pad), kPad);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < width; ++c) out[static_cast<size_t>(r) * (width + pad) + c] = d(rng);
    return out;
}

// The whole C buffer (padding included) after the GEMM on `backend`.
std::vector<float> run_gemm(Backend& backend, const GemmCase& g, uint32_t seed) {
    std::mt19937 rng(seed);
    const int a_rows = g.trans_a ? g.k : g.m, a_width = g.trans_a ? g.m : g.k;
    const int b_rows = g.trans_b ? g.n : g.k, b_width = g.trans_b ? g.k : g.n;
    const auto a = padded_matrix(a_rows, a_width, g.pad_a, rng);
    const auto b = padded_matrix(b_rows, b_width, g.pad_b, rng);
    const auto c = padded_matrix(g.m, g.n, g.pad_c, rng);
    Buffers buf(backend);
    // Empty host matrices (k == 0) still need a valid pointer.
    const float* da = a.empty() ? buf.zeros<float>(1) : buf.upload(a);
    const float* db = b.empty() ? buf.zeros<float>(1) : buf.upload(b);
    float* dc = buf.upload(c);
    backend.gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, da, a_width + g.pad_a, db, b_width + g.pad_b, g.beta,
                 dc, g.n + g.pad_c);
    return buf.download(dc, c.size());
}

void check_gemm(const GemmCase& g, double rel, double abs) {
    INFO("trans_a " << g.trans_a << " trans_b " << g.trans_b << " m " << g.m << " n " << g.n << " k " << g.k
                    << " alpha " << g.alpha << " beta " << g.beta);
    CpuBackend cpu;
    CudaBackend gpu(0);
    const uint32_t seed = static_cast<uint32_t>(g.m * 131 + g.n * 17 + g.k);
    require_close(run_gemm(gpu, g, seed), run_gemm(cpu, g, seed), rel, abs);
}

}  // namespace

TEST_CASE("gemm 1x1x1 matches the CPU for every transpose combination") {
    const bool trans_a = GENERATE(false, true);
    const bool trans_b = GENERATE(false, true);
    check_gemm({trans_a, trans_b, 1, 1, 1, 0, 0, 0, 1.0f, 0.0f}, 1e-4, 1e-4);
    check_gemm({trans_a, trans_b, 1, 1, 1, 2, 3, 1, 0.5f, 0.25f}, 1e-4, 1e-4);
}

TEST_CASE("gemm 17x33x9 with leading dimensions wider than the matrices, every transpose combination") {
    const bool trans_a = GENERATE(false, true);
    const bool trans_b = GENERATE(false, true);
    const float beta = GENERATE(0.0f, 1.0f, -0.5f);
    check_gemm({trans_a, trans_b, 17, 33, 9, 3, 5, 2, 1.5f, beta}, 1e-4, 1e-4);
    check_gemm({trans_a, trans_b, 17, 33, 9, 0, 0, 0, 1.0f, beta}, 1e-4, 1e-4);
}

TEST_CASE("gemm at dense-layer shapes (batch 32, 784 -> 128): forward, weight and input gradients") {
    // forward y = x W, dW = x^T dy, dx = dy W^T
    check_gemm({false, false, 32, 128, 784, 0, 0, 0, 1.0f, 0.0f}, 1e-4, 1e-4);
    check_gemm({true, false, 784, 128, 32, 0, 0, 0, 1.0f, 1.0f}, 1e-4, 1e-4);
    check_gemm({false, true, 32, 784, 128, 0, 0, 0, 1.0f, 0.0f}, 1e-4, 1e-4);
    check_gemm({true, true, 32, 784, 128, 4, 4, 4, 0.5f, 0.5f}, 1e-4, 1e-4);
}

TEST_CASE("gemm with k == 0 scales C by beta (exactly 0 for beta == 0); m or n == 0 does nothing") {
    const bool trans_a = GENERATE(false, true);
    const float beta = GENERATE(0.0f, 0.5f);
    check_gemm({trans_a, false, 3, 4, 0, 0, 0, 2, 1.0f, beta}, 0.0, 0.0);
    check_gemm({trans_a, true, 0, 4, 5, 0, 0, 2, 1.0f, beta}, 0.0, 0.0);
    check_gemm({trans_a, false, 3, 0, 5, 0, 0, 2, 1.0f, beta}, 0.0, 0.0);
}

namespace {
double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
    return worst;
}
}  // namespace

TEST_CASE("training.precision: fp32 by default; tf32/bf16/fp16 GEMMs within their accuracy, and really reduced") {
    CpuBackend cpu;
    CudaBackend gpu(0);
    const GemmCase g{false, false, 32, 128, 784, 0, 0, 0, 1.0f, 0.0f};
    const auto reference = run_gemm(cpu, g, 7);
    require_close(run_gemm(gpu, g, 7), reference, 1e-4, 1e-4);
    const double fp32_error = max_abs_difference(run_gemm(gpu, g, 7), reference);
    struct Mode {
        Precision precision;
        double tolerance;
    };
    // Mantissa bits: tf32 10, fp16 10, bf16 7; inputs in [-1, 1], 784 products per output.
    for (const Mode m : {Mode{Precision::tf32, 5e-2}, Mode{Precision::fp16, 5e-2}, Mode{Precision::bf16, 2e-1}}) {
        gpu.set_precision(m.precision);
        const auto reduced = run_gemm(gpu, g, 7);
        require_close(reduced, reference, m.tolerance, m.tolerance);
        // The mode is really used: rounded inputs move the result well past fp32's own error.
        CHECK(max_abs_difference(reduced, reference) > 10 * fp32_error);
    }
    gpu.set_precision(Precision::fp32);
    require_close(run_gemm(gpu, g, 7), reference, 1e-4, 1e-4);
}
