// bench_conv: times CpuBackend's conv2d calls (and pooling, batch norm) on the shapes of
// configs/fashion_mnist_cnn.yaml (batch 32) next to a bare OpenBLAS GEMM of the
// same M, N, K, so the im2col/col2im overhead is visible. Not a test: run it by
// hand (build-dir/tests/unit/backend/bench_conv [blas_threads] [repetitions]).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "best_seconds.hpp"

using gputrain::Conv2dGeometry;
using gputrain::CpuBackend;

namespace {

Conv2dGeometry same_3x3(int batch, int size, int in_c, int out_c) {
    Conv2dGeometry g;
    g.batch = batch;
    g.in_h = g.in_w = g.out_h = g.out_w = size;
    g.in_c = in_c, g.out_c = out_c;
    g.kernel_h = g.kernel_w = 3;
    g.pad_top = g.pad_left = 1;
    return g;
}

void report(const char* pass, const char* variant, double flops, double seconds, double gemm_seconds) {
    std::printf("  %-16s %-22s %8.3f ms %7.2f GFLOP/s   bare GEMM %8.3f ms %7.2f GFLOP/s   (%.2fx)\n", pass, variant,
                seconds * 1e3, flops / seconds * 1e-9, gemm_seconds * 1e3, flops / gemm_seconds * 1e-9,
                seconds / gemm_seconds);
}

void bench(const char* name, const Conv2dGeometry& g, int repetitions) {
    CpuBackend be;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    auto random = [&](size_t n) {
        std::vector<float> v(n);
        for (float& x : v) x = d(rng);
        return v;
    };
    const int m = g.batch * g.out_h * g.out_w, n = g.out_c, k = g.kernel_h * g.kernel_w * g.in_c;
    const auto x = random(static_cast<size_t>(g.batch) * g.in_h * g.in_w * g.in_c);
    const auto w = random(static_cast<size_t>(n) * k);
    const auto dy = random(static_cast<size_t>(m) * n);
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
    const auto cols = random(static_cast<size_t>(m) * k);
    std::vector<float> cols_out(cols.size());
    const double flops = 2.0 * m * n * k;
    std::printf("%s: batch %d, %dx%dx%d -> %dx%dx%d, kernel %dx%d  (GEMM M=%d N=%d K=%d)\n", name, g.batch, g.in_h,
                g.in_w, g.in_c, g.out_h, g.out_w, g.out_c, g.kernel_h, g.kernel_w, m, n, k);

    const double gemm_fwd = best_seconds(repetitions, [&] {
        be.gemm(false, true, m, n, k, 1.0f, cols.data(), k, w.data(), k, 0.0f, y.data(), n);
    });
    const double gemm_data = best_seconds(repetitions, [&] {
        be.gemm(false, false, m, k, n, 1.0f, dy.data(), n, w.data(), k, 0.0f, cols_out.data(), k);
    });
    const double gemm_filter = best_seconds(repetitions, [&] {
        be.gemm(true, false, n, k, m, 1.0f, dy.data(), n, cols.data(), k, 0.0f, dw.data(), k);
    });

    // The backend chunks im2col within a cache budget, or by a smaller
    // workspace: `chunk` samples' columns per GEMM, 0 for what
    // conv2d_workspace_bytes asks for (the budget). The whole batch as one
    // im2col GEMM is slower than the bare GEMM column on its own.
    Conv2dGeometry one = g;
    one.batch = 1;
    const size_t per_sample = be.conv2d_workspace_bytes(one);
    for (const int chunk : {0, 4, 2, 1}) {
        std::vector<unsigned char> ws(chunk == 0 ? be.conv2d_workspace_bytes(g) : chunk * per_sample);
        const std::string variant = (chunk == 0 ? "default: " : "im2col ") + std::to_string(ws.size() / per_sample) +
                                    " sample(s)";
        report("forward", variant.c_str(), flops, best_seconds(repetitions, [&] {
                   be.conv2d_forward(g, x.data(), w.data(), y.data(), ws.data(), ws.size());
               }), gemm_fwd);
        report("backward data", variant.c_str(), flops, best_seconds(repetitions, [&] {
                   be.conv2d_backward_data(g, dy.data(), w.data(), dx.data(), ws.data(), ws.size());
               }), gemm_data);
        report("backward filter", variant.c_str(), flops, best_seconds(repetitions, [&] {
                   be.conv2d_backward_filter(g, x.data(), dy.data(), dw.data(), ws.data(), ws.size());
               }), gemm_filter);
    }
}

// Pooling and batch norm are memory-bound: reported as GB/s of x and y moved.
void bench_pool_and_batch_norm(const char* name, int batch, int size, int channels, int repetitions) {
    CpuBackend be;
    gputrain::Pool2dGeometry g;
    g.batch = batch;
    g.in_h = g.in_w = size;
    g.channels = channels;
    g.out_h = g.out_w = size / 2;
    g.pool_h = g.pool_w = g.stride_h = g.stride_w = 2;
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    const size_t in = static_cast<size_t>(batch) * size * size * channels, out = in / 4;
    std::vector<float> x(in), dx(in), y(out), dy(out);
    for (float& v : x) v = d(rng);
    for (float& v : dy) v = d(rng);
    const double bytes = (in + out) * sizeof(float);
    const double fwd = best_seconds(repetitions, [&] { be.pool2d_forward(g, x.data(), y.data()); });
    const double bwd =
        best_seconds(repetitions, [&] { be.pool2d_backward(g, x.data(), y.data(), dy.data(), dx.data()); });
    std::printf("%s: max pool 2x2 on %dx%dx%dx%d   forward %.3f ms (%.1f GB/s)   backward %.3f ms (%.1f GB/s)\n", name,
                batch, size, size, channels, fwd * 1e3, bytes / fwd * 1e-9, bwd * 1e3, 2 * bytes / bwd * 1e-9);

    const int rows = batch * size * size;
    std::vector<float> sums(2 * channels), mean_invstd(2 * channels), gamma(channels, 1.0f), beta(channels, 0.0f);
    std::vector<float> z(in);
    const double bn_fwd = best_seconds(repetitions, [&] {
        be.batch_norm_sums(x.data(), rows, channels, nullptr, sums.data());
        be.batch_norm_finalize(sums.data(), static_cast<float>(rows), channels, 1e-3f, 0.99f, nullptr,
                               mean_invstd.data(), nullptr, nullptr);
        be.batch_norm_apply(x.data(), mean_invstd.data(), gamma.data(), beta.data(), z.data(), rows, channels);
    });
    const double bn_bwd = best_seconds(repetitions, [&] {
        be.batch_norm_backward_sums(x.data(), z.data(), mean_invstd.data(), rows, channels, sums.data());
        be.batch_norm_backward_data(x.data(), z.data(), mean_invstd.data(), gamma.data(), sums.data(),
                                    static_cast<float>(rows), dx.data(), rows, channels);
    });
    std::printf("%s: batch norm on %d x %d   forward %.3f ms   backward %.3f ms\n", name, rows, channels, bn_fwd * 1e3,
                bn_bwd * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
    const int blas_threads = argc > 1 ? std::atoi(argv[1]) : 1;
    const int repetitions = argc > 2 ? std::atoi(argv[2]) : 20;
    gputrain::set_cpu_blas_threads(blas_threads);
    std::printf("OpenBLAS threads: %d, fastest of %d runs\n", blas_threads, repetitions);
    bench("conv1", same_3x3(32, 28, 1, 32), repetitions);
    bench("conv2", same_3x3(32, 14, 32, 64), repetitions);
    bench_pool_and_batch_norm("after conv1", 32, 28, 32, repetitions);
    bench_pool_and_batch_norm("after conv2", 32, 14, 64, repetitions);
    return 0;
}
