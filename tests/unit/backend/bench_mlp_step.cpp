// bench_mlp_step: times each CpuBackend call of one training step of the
// reference MLP (configs/fashion_mnist_mlp.yaml: 784-128-10, Adam, batch 32 on
// one replica or 16 on each of two), with the GEMMs through OpenBLAS and through
// cpu::small_gemm, the bias + relu passes plain and fused, and Adam with and
// without denormals flushed to zero. Best
// and median of many repetitions: on a shared machine other load only ever
// adds time, so the best is the machine's speed and the median its weather.
// Not a test: run it by hand (build-dir/tests/unit/backend/bench_mlp_step [repetitions]).
#include <cblas.h>
#include <xmmintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/cpu_features.hpp"
#include "backend/cpu/cpu_small_gemm.hpp"

using gputrain::Activation;
using gputrain::CpuBackend;

namespace {

struct Timing {
    double best, median;
};

Timing time_us(int repetitions, const std::function<void()>& f) {
    f();
    std::vector<double> t(static_cast<size_t>(repetitions));
    for (auto& x : t) {
        const auto start = std::chrono::steady_clock::now();
        f();
        x = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    }
    std::sort(t.begin(), t.end());
    return {t.front(), t[t.size() / 2]};
}

void report(const std::string& what, Timing t) { std::printf("  %-44s %9.1f %9.1f\n", what.c_str(), t.best, t.median); }

using Gemm = std::function<void(bool, int, int, int, const float*, int, const float*, int, float*, int)>;

void blas_gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
               float* c, int ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k,
                1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}

}  // namespace

int main(int argc, char** argv) {
    const int repetitions = argc > 1 ? std::atoi(argv[1]) : 2000;
    openblas_set_num_threads(1);
    const int in = 784, hidden = 128, classes = 10;
    const size_t params = static_cast<size_t>(in) * hidden + hidden + static_cast<size_t>(hidden) * classes + classes;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(0.0f, 1.0f), w(-0.08f, 0.08f);
    std::vector<float> x(32 * in), w1(static_cast<size_t>(in) * hidden), b1(hidden), w2(hidden * classes), b2(classes);
    for (auto& v : x) v = u(rng) < 0.5f ? 0.0f : u(rng);  // about half the pixels of a Fashion-MNIST image are 0
    for (auto& v : w1) v = w(rng);
    for (auto& v : w2) v = w(rng);
    std::vector<int32_t> labels(32);
    for (auto& l : labels) l = static_cast<int32_t>(rng() % classes);
    std::vector<float> z1(32 * hidden), h(32 * hidden), z2(32 * classes), g2(32 * classes), dh(32 * hidden),
        dx(32 * in), grads(params), stats(2);
    CpuBackend be;
    std::printf("CpuBackend calls of one step of the 784-128-10 MLP, microseconds (best, median of %d)\n", repetitions);

    for (const int rows : {32, 16}) {
        for (const bool small : {false, true}) {
            if (small && !gputrain::cpu::has_avx2_fma()) continue;
            std::printf("%d rows per replica, GEMMs through %s:\n", rows, small ? "cpu::small_gemm" : "OpenBLAS");
            auto gemm = [&](bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                            float* c, int ldc) {
                if (small && gputrain::cpu::small_gemm_pays(ta, tb, m, n, k))
                    gputrain::cpu::small_gemm(ta, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
                else
                    blas_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
            };
            float* dw1 = grads.data();
            float* db1 = dw1 + static_cast<size_t>(in) * hidden;
            float* dw2 = db1 + hidden;
            float* db2 = dw2 + hidden * classes;
            double total_best = 0, total_median = 0;
            auto part = [&](const std::string& what, const std::function<void()>& f) {
                const Timing t = time_us(repetitions, f);
                total_best += t.best;
                total_median += t.median;
                report(what, t);
            };
            part("x W1 (forward GEMM)", [&] { gemm(false, false, rows, hidden, in, x.data(), in, w1.data(), hidden, z1.data(), hidden); });
            part("+ b1, relu", [&] {
                be.add_bias(z1.data(), b1.data(), rows, hidden);
                be.activation_forward(Activation::relu, z1.data(), h.data(), static_cast<size_t>(rows) * hidden);
            });
            part("h W2 + b2, softmax cross-entropy", [&] {
                gemm(false, false, rows, classes, hidden, h.data(), hidden, w2.data(), classes, z2.data(), classes);
                be.add_bias(z2.data(), b2.data(), rows, classes);
                be.softmax_cross_entropy(z2.data(), labels.data(), rows, classes, 1.0f / 32, g2.data(), stats.data(), 0.0f);
            });
            part("dW2, db2, dh = g W2^T", [&] {
                gemm(true, false, hidden, classes, rows, h.data(), hidden, g2.data(), classes, dw2, classes);
                be.sum_rows(g2.data(), db2, rows, classes);
                gemm(false, true, rows, hidden, classes, g2.data(), classes, w2.data(), classes, dh.data(), hidden);
            });
            part("relu backward, db1", [&] {
                be.activation_backward(Activation::relu, z1.data(), h.data(), dh.data(), z1.data(),
                                       static_cast<size_t>(rows) * hidden);
                be.sum_rows(z1.data(), db1, rows, hidden);
            });
            part("dW1 = x^T dz (GEMM)", [&] { gemm(true, false, in, hidden, rows, x.data(), in, z1.data(), hidden, dw1, hidden); });
            // The same two passes fused (training.fused_kernels: true), after the plain ones above.
            const Timing fused_forward = time_us(repetitions, [&] {
                be.bias_activation_forward(Activation::relu, z1.data(), b1.data(), h.data(), rows, hidden);
            });
            const Timing fused_backward = time_us(repetitions, [&] {
                be.activation_bias_backward(Activation::relu, z1.data(), h.data(), dh.data(), z1.data(), db1, rows,
                                            hidden);
            });
            const Timing unneeded = time_us(repetitions, [&] {
                gemm(false, true, rows, in, hidden, z1.data(), hidden, w1.data(), hidden, dx.data(), in);
            });
            part("all_finite(gradients)", [&] { (void)be.all_finite(grads.data(), params); });
            std::printf("  %-44s %9.1f %9.1f\n", "sum (without Adam)", total_best, total_median);
            report("[dx = dz W1^T, which Flatten discards]", unneeded);
            report("[+ b1, relu: fused in one pass]", fused_forward);
            report("[relu backward, db1: fused in one pass]", fused_backward);
        }
    }

    // Adam over the model's 101,770 parameters, from moments like those after an
    // epoch of the real job: 5.7% of the first moments denormal (rarely lit
    // pixels, zero gradient), the rest ordinary.
    std::vector<float> p(params), g(params), m(params), v(params);
    for (size_t i = 0; i < params; ++i) {
        p[i] = w(rng);
        const bool dark = u(rng) < 0.057f;
        g[i] = dark ? 0.0f : w(rng) * 0.01f;
        m[i] = dark ? 1e-39f * (1.0f + u(rng)) : w(rng) * 0.01f;
        v[i] = dark ? 1e-12f : 1e-6f * u(rng);
    }
    const gputrain::math::AdamParams a{1e-3f, 0.9f, 0.999f, 1e-7f, 0.0f};
    std::printf("Adam over %zu parameters:\n", params);
    // Restore the moments before each timed step, so every repetition meets the same denormals.
    const auto m0 = m, v0 = v;
    auto adam = [&] {
        std::copy(m0.begin(), m0.end(), m.begin());
        std::copy(v0.begin(), v0.end(), v.begin());
        be.adam_step(p.data(), g.data(), m.data(), v.data(), params, a);
    };
    const unsigned csr = _mm_getcsr();
    report("adam_step (+ restoring m, v), denormals kept", time_us(repetitions, adam));
    be.bind_thread();  // flush to zero
    report("adam_step (+ restoring m, v), FTZ/DAZ", time_us(repetitions, adam));
    _mm_setcsr(csr);
    report("restoring m, v alone", time_us(repetitions, [&] {
               std::copy(m0.begin(), m0.end(), m.begin());
               std::copy(v0.begin(), v0.end(), v.begin());
           }));
    return 0;
}
