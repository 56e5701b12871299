// bench_gpt_ops: times the CPU's ops of a character GPT other than its dense
// GEMMs (`gputrain bench` times those) on the shapes of one replica of
// configs/shakespeare_char_small.yaml (and the attention of
// configs/shakespeare_char_gpt.yaml's block): causal attention forward and
// backward (GFLOP/s of the causal work, the products over visible keys
// only), layer norm forward and backward, and the loss. Not a test: run it by
// hand (build-dir/tests/unit/backend/bench_gpt_ops [repetitions] [small]).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "best_seconds.hpp"
#include "backend/ops/attention.hpp"
#include "backend/ops/normalization.hpp"

using gputrain::CpuBackend;
namespace ops = gputrain::ops;

namespace {

void bench(const char* name, int rows, int T, int heads, int D, int repetitions) {
    CpuBackend be;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const int C = heads * D;
    const size_t m = static_cast<size_t>(rows) * T;
    std::vector<float> qkv(m * 3 * C), dout(m * C), out(m * C), dqkv(m * 3 * C);
    for (float& x : qkv) x = dist(rng);
    for (float& x : dout) x = dist(rng);
    std::vector<float> lse(static_cast<size_t>(rows) * heads * T), delta(lse.size());
    std::vector<float> tile(ops::attention_cpu_tile_floats(T, T, D));
    const ops::AttentionForward fwd{qkv.data(), 3 * C, out.data(), C, lse.data(), rows, T, heads, D, tile.data()};
    const ops::AttentionBackward bwd{qkv.data(), 3 * C, out.data(), dout.data(), C, lse.data(), dqkv.data(), 3 * C,
                                     delta.data(), rows, T, heads, D, tile.data()};
    run_op(be, fwd);
    // Causal products: T (T + 1) / 2 visible pairs, D multiply-adds each, per product.
    const double pairs = static_cast<double>(rows) * heads * T * (T + 1) / 2.0;
    const double fwd_flop = 2.0 * 2.0 * pairs * D, bwd_flop = 5.0 * 2.0 * pairs * D;
    const double f = best_seconds(repetitions, [&] { run_op(be, fwd); });
    const double b = best_seconds(repetitions, [&] { run_op(be, bwd); });
    std::printf("%-34s forward %8.3f ms %6.1f GFLOP/s   backward %8.3f ms %6.1f GFLOP/s\n", name, f * 1e3,
                fwd_flop / f * 1e-9, b * 1e3, bwd_flop / b * 1e-9);
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

void bench_rows(int rows, int cols, int classes, int repetitions) {
    CpuBackend be;
    const size_t m = static_cast<size_t>(rows);
    const auto x = random_floats(m * cols, 2), dy = random_floats(m * cols, 3), gamma = random_floats(cols, 4);
    const auto beta = random_floats(cols, 5);
    std::vector<float> y(m * cols), dx(m * cols), mean(m), rstd(m), dgamma(cols), dbeta(cols);
    const ops::LayerNormForward fwd{x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(),
                                    rows, cols, 1e-5f, false};
    const ops::LayerNormBackward bwd{x.data(), dy.data(), mean.data(), rstd.data(), gamma.data(), dx.data(),
                                     dgamma.data(), dbeta.data(), rows, cols, false, nullptr, 0};
    run_op(be, fwd);
    const double f = best_seconds(repetitions, [&] { run_op(be, fwd); });
    const double b = best_seconds(repetitions, [&] { run_op(be, bwd); });
    std::printf("layer norm %d x %d                forward %8.3f ms                  backward %8.3f ms\n", rows, cols,
                f * 1e3, b * 1e3);

    const auto logits = random_floats(m * classes, 6);
    std::vector<int32_t> labels(m);
    for (size_t r = 0; r < m; ++r) labels[r] = static_cast<int32_t>(r * 7 % classes);
    std::vector<float> grad(m * classes);
    float stats[2] = {};
    const double l = best_seconds(repetitions, [&] {
        be.softmax_cross_entropy(logits.data(), labels.data(), rows, classes, 1.0f / rows, grad.data(), stats, 0.0f);
    });
    std::printf("softmax cross-entropy %d x %d      with its gradient %8.3f ms\n", rows, classes, l * 1e3);

    // The MLP's first dense layer: bias + GELU, and its gradient with the bias's.
    const int hidden = 4 * cols;
    const auto z0 = random_floats(m * hidden, 7), dyh = random_floats(m * hidden, 8), bias = random_floats(hidden, 9);
    std::vector<float> z(m * hidden), yh(m * hidden), dz(m * hidden), db(hidden);
    const double gf = best_seconds(repetitions, [&] {
        std::copy(z0.begin(), z0.end(), z.begin());
        be.bias_activation_forward(gputrain::Activation::gelu, z.data(), bias.data(), yh.data(), rows, hidden);
    });
    const double copy = best_seconds(repetitions, [&] { std::copy(z0.begin(), z0.end(), z.begin()); });
    const double gb = best_seconds(repetitions, [&] {
        be.activation_bias_backward(gputrain::Activation::gelu, z.data(), yh.data(), dyh.data(), dz.data(), db.data(),
                                    rows, hidden);
    });
    std::printf("bias + gelu %d x %d               forward %8.3f ms                  backward %8.3f ms\n", rows,
                hidden, (gf - copy) * 1e3, gb * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
    const int repetitions = argc > 1 ? std::atoi(argv[1]) : 50;
    bench("small GPT: 6 x T 64, 4 heads of 32", 6, 64, 4, 32, repetitions);
    bench_rows(6 * 64, 128, 65, repetitions);
    if (argc > 2) return 0;
    bench("GPT: 32 x T 256, 6 heads of 64", 32, 256, 6, 64, std::max(1, repetitions / 10));
    return 0;
}
