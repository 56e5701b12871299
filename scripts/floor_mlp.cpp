// floor_mlp: the reference job (Fashion-MNIST, 784-128-10 MLP, ReLU, softmax
// cross-entropy, Keras' Adam at 1e-3, batch 32) written by hand as fast as
// this machine allows, the floor scripts/bench measures gputrain's W1 against.
// The recipe: T replica threads (default 2) each take batch/T samples of every
// step; libxsmm's JIT kernels for every GEMM (B transposed in the kernel; the
// one transposed A, W2^T, copied: 1,280 floats); denormals flushed (FTZ/DAZ); after the backward pass each
// thread sums its slice of the gradients over the threads and applies Adam to
// that slice in the same pass (fused); spinning barriers between the phases.
// No checkpoints, no validation, no metrics beyond the epoch's mean loss and
// accuracy (computed from the training batches, as Keras' progress bar does).
//
//   floor_mlp IMAGES LABELS [--threads T] [--epochs N] [--batch B] [--limit N]
//
// IMAGES and LABELS are IDX files (plain or .gz). Prints one line per epoch:
// "epoch 2: 0.171 s, loss 0.4321, accuracy 0.8456", the seconds of the
// training loop alone.
#include <libxsmm.h>
#include <pmmintrin.h>
#include <xmmintrin.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kIn = 784, kHidden = 128, kOut = 10;
constexpr size_t kW1 = size_t(kIn) * kHidden, kB1 = kHidden, kW2 = size_t(kHidden) * kOut, kB2 = kOut;
constexpr size_t kParams = kW1 + kB1 + kW2 + kB2;

[[noreturn]] void die(const std::string& message) {
    std::fprintf(stderr, "floor_mlp: %s\n", message.c_str());
    std::exit(1);
}

std::vector<uint8_t> read_gz(const char* path) {
    gzFile f = gzopen(path, "rb");
    if (!f) die(std::string("cannot open ") + path);
    std::vector<uint8_t> out;
    uint8_t buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
    gzclose(f);
    return out;
}

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

// A barrier that spins (the phases of a step last microseconds).
class SpinBarrier {
public:
    explicit SpinBarrier(int n) : n_(n) {}
    void wait() {
        const int gen = generation_.load(std::memory_order_acquire);
        if (count_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
            count_.store(0, std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_acq_rel);
        } else {
            while (generation_.load(std::memory_order_acquire) == gen) _mm_pause();
        }
    }

private:
    const int n_;
    std::atomic<int> count_{0};
    std::atomic<int> generation_{0};
};

// C = A op(B), column-major; op(B) = B^T with `transpose_b` (B stored n x k).
libxsmm_smmfunction kernel(int m, int n, int k, int lda, int ldb, int ldc, float beta, bool transpose_b = false) {
    const float alpha = 1.0f;
    const int flags = LIBXSMM_GEMM_FLAGS('N', transpose_b ? 'T' : 'N');
    libxsmm_blasint M = m, N = n, K = k, A = lda, B = ldb, C = ldc;
    libxsmm_smmfunction f = libxsmm_smmdispatch(M, N, K, &A, &B, &C, &alpha, &beta, &flags, nullptr);
    if (!f) die("libxsmm has no kernel for " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) die("usage: floor_mlp IMAGES LABELS [--threads T] [--epochs N] [--batch B] [--limit N]");
    int threads = 2, epochs = 3, batch = 32;
    long limit = 0;
    for (int i = 3; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        const long v = std::atol(argv[i + 1]);
        if (flag == "--threads") threads = int(v);
        else if (flag == "--epochs") epochs = int(v);
        else if (flag == "--batch") batch = int(v);
        else if (flag == "--limit") limit = v;
        else die("unknown option " + flag);
    }
    if (threads < 1 || epochs < 1 || batch < threads || batch % threads) die("bad --threads/--epochs/--batch");
    const std::vector<uint8_t> images = read_gz(argv[1]), labels = read_gz(argv[2]);
    if (images.size() < 16 || be32(images.data()) != 0x803 || be32(images.data() + 8) * be32(images.data() + 12) != kIn)
        die(std::string(argv[1]) + ": not an IDX file of 28x28 images");
    long samples = be32(images.data() + 4);
    if (labels.size() < 8 + size_t(samples)) die(std::string(argv[2]) + ": fewer labels than images");
    if (limit > 0) samples = std::min(samples, limit);
    const uint8_t* pixels = images.data() + 16;
    const uint8_t* classes = labels.data() + 8;
    const long steps = samples / batch;  // whole batches, as a fixed-shape loop
    const int rows = batch / threads;

    libxsmm_init();
    // The parameters [W1 (784x128, Keras' [in, out]), b1, W2 (128x10), b2], Glorot-uniform weights.
    std::vector<float> w(kParams, 0.0f), m(kParams, 0.0f), v(kParams, 0.0f);
    std::mt19937 rng(42);
    const auto glorot = [&](float* p, size_t n, int fan_in, int fan_out) {
        std::uniform_real_distribution<float> u(-std::sqrt(6.0f / (fan_in + fan_out)), std::sqrt(6.0f / (fan_in + fan_out)));
        for (size_t i = 0; i < n; ++i) p[i] = u(rng);
    };
    glorot(w.data(), kW1, kIn, kHidden);
    glorot(w.data() + kW1 + kB1, kW2, kHidden, kOut);
    std::vector<std::vector<float>> grads(static_cast<size_t>(threads), std::vector<float>(kParams));
    std::vector<int> order(static_cast<size_t>(samples));
    std::vector<double> loss_sum(static_cast<size_t>(threads)), correct(static_cast<size_t>(threads));
    SpinBarrier barrier(threads);

    // Column-major GEMMs (libxsmm's convention): a sample is a column.
    const auto fwd1 = kernel(kHidden, rows, kIn, kHidden, kIn, kHidden, 0.0f);   // Z1 = W1 X
    const auto fwd2 = kernel(kOut, rows, kHidden, kOut, kHidden, kOut, 0.0f);    // Z2 = W2 H
    const auto bwd_h = kernel(kHidden, rows, kOut, kHidden, kOut, kHidden, 0.0f); // dH = W2^T dZ2
    const auto dw2 = kernel(kOut, kHidden, rows, kOut, kHidden, kOut, 0.0f, true);  // dW2 = dZ2 H^T
    const auto dw1 = kernel(kHidden, kIn, rows, kHidden, kIn, kHidden, 0.0f, true);  // dW1 = dZ1 X^T
    const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-7f;

    for (int epoch = 1; epoch <= epochs; ++epoch) {
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        const auto start = std::chrono::steady_clock::now();
        const auto work = [&](int t) {
            _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ and DAZ
            std::vector<float> x(size_t(kIn) * rows), z1(size_t(kHidden) * rows), h(z1.size()),
                z2(size_t(kOut) * rows), w2t(kW2), dh(z1.size());
            float* g = grads[size_t(t)].data();
            double loss = 0, hits = 0;
            const size_t slice = (kParams + threads - 1) / threads;
            const size_t lo = std::min(kParams, slice * t), hi = std::min(kParams, lo + slice);
            for (long step = 0; step < steps; ++step) {
                const int* idx = order.data() + step * batch + t * rows;
                for (int s = 0; s < rows; ++s) {
                    const uint8_t* p = pixels + size_t(idx[s]) * kIn;
                    for (int i = 0; i < kIn; ++i) x[size_t(s) * kIn + i] = p[i] * (1.0f / 255.0f);
                }
                const float* W1 = w.data();
                const float* B1 = W1 + kW1;
                const float* W2 = B1 + kB1;
                const float* B2 = W2 + kW2;
                fwd1(W1, x.data(), z1.data());
                for (int s = 0; s < rows; ++s)
                    for (int o = 0; o < kHidden; ++o) {
                        float& z = z1[size_t(s) * kHidden + o];
                        z += B1[o];
                        h[size_t(s) * kHidden + o] = z > 0 ? z : 0;
                    }
                fwd2(W2, h.data(), z2.data());
                for (int s = 0; s < rows; ++s) {  // softmax cross-entropy; dZ2 in z2, over the global batch
                    float* z = z2.data() + size_t(s) * kOut;
                    float top = -INFINITY;
                    int arg = 0;
                    for (int o = 0; o < kOut; ++o) {
                        z[o] += B2[o];
                        if (z[o] > top) top = z[o], arg = o;
                    }
                    float sum = 0;
                    for (int o = 0; o < kOut; ++o) sum += (z[o] = std::exp(z[o] - top));
                    const int y = classes[idx[s]];
                    loss -= std::log(z[y] / sum);
                    hits += arg == y;
                    for (int o = 0; o < kOut; ++o) z[o] = (z[o] / sum - (o == y)) / float(batch);
                }
                // Backward. W2^T copied (libxsmm's JIT transposes B, not A).
                for (int i = 0; i < kHidden; ++i)
                    for (int o = 0; o < kOut; ++o) w2t[size_t(o) * kHidden + i] = W2[size_t(i) * kOut + o];
                dw2(z2.data(), h.data(), g + kW1 + kB1);
                for (int o = 0; o < kOut; ++o) {
                    float sum = 0;
                    for (int s = 0; s < rows; ++s) sum += z2[size_t(s) * kOut + o];
                    g[kW1 + kB1 + kW2 + o] = sum;
                }
                bwd_h(w2t.data(), z2.data(), dh.data());
                for (size_t i = 0; i < dh.size(); ++i)
                    if (z1[i] <= 0) dh[i] = 0;
                for (int o = 0; o < kHidden; ++o) {
                    float sum = 0;
                    for (int s = 0; s < rows; ++s) sum += dh[size_t(s) * kHidden + o];
                    g[kW1 + o] = sum;
                }
                dw1(dh.data(), x.data(), g);
                barrier.wait();  // every thread's gradients are written
                // This thread's slice: the sum over threads, then Adam (Keras' form), in one pass.
                const float t1 = float(epoch - 1) * float(steps) + float(step + 1);
                const float alpha = lr * std::sqrt(1 - std::pow(b2, t1)) / (1 - std::pow(b1, t1));
                float* __restrict W = w.data();
                float* __restrict M = m.data();
                float* __restrict V = v.data();
                float* __restrict G = g;  // the other threads read only their own slices of it
                for (int r = 0; r < threads; ++r) {
                    if (r == t) continue;
                    const float* __restrict other = grads[size_t(r)].data();
                    for (size_t i = lo; i < hi; ++i) G[i] += other[i];
                }
                // (Locals, not the lambda's captures, so that the loop vectorizes.)
                const float beta1 = b1, beta2 = b2, epsilon = eps, rate = alpha;
                for (size_t i = lo; i < hi; ++i) {
                    M[i] = beta1 * M[i] + (1 - beta1) * G[i];
                    V[i] = beta2 * V[i] + (1 - beta2) * G[i] * G[i];
                    W[i] -= rate * M[i] / (std::sqrt(V[i]) + epsilon);
                }
                barrier.wait();  // the weights are updated
            }
            loss_sum[size_t(t)] = loss;
            correct[size_t(t)] = hits;
        };
        std::vector<std::thread> pool;
        for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
        work(0);
        for (auto& th : pool) th.join();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double n = double(steps) * batch;
        std::printf("epoch %d: %.3f s, loss %.4f, accuracy %.4f\n", epoch, seconds,
                    std::accumulate(loss_sum.begin(), loss_sum.end(), 0.0) / n,
                    std::accumulate(correct.begin(), correct.end(), 0.0) / n);
        std::fflush(stdout);
    }
    libxsmm_finalize();
    return 0;
}
