#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/vector_math.hpp"

#include "backend/cpu/cpu_kernels.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "backend/cpu/cpu_features.hpp"
#include "backend/cpu/conv_description.hpp"
#include "backend/cpu/onednn_conv.hpp"
#include "core/error.hpp"
#include "backend/cpu/cpu_small_gemm.hpp"

namespace gputrain {

namespace {
constexpr size_t kAlignment = 64;

#if GPUTRAIN_THREAD_SANITIZER
// OpenBLAS's constructor chose one thread per core before this runs: code that
// never calls set_cpu_blas_threads (the unit tests) gets one thread too.
[[maybe_unused]] const bool blas_on_calling_thread = (openblas_set_num_threads(1), true);
#endif

int argmax_row(const float* row, int cols) {
    int best = 0;
    for (int c = 1; c < cols; ++c)
        if (row[c] > row[best]) best = c;
    return best;
}
}  // namespace

void set_cpu_blas_threads(int threads) {
    // OpenBLAS starts the worker threads it lacks here, and a thread inherits
    // the MXCSR of the thread that starts it: with FTZ/DAZ on for the call,
    // its workers flush denormals as the replica threads do. Without, a GEMM's
    // share computed on a worker kept denormals that the caller's share
    // flushed, and a run resumed in the middle of an epoch ended with a few of
    // Adam's first moments (near 1e-37) an ULP away from an uninterrupted
    // run's. The calling thread keeps its own setting.
    threads = kBlasOnCallingThread ? 1 : std::max(1, threads);  // see kBlasOnCallingThread
    set_onednn_threads(threads);  // oneDNN's convolutions get as many (OpenMP) threads
#if defined(__x86_64__) || defined(__i386__)
    const unsigned saved = _mm_getcsr();
    flush_denormals_on_this_thread();
    openblas_set_num_threads(threads);
    _mm_setcsr(saved);
#else
    openblas_set_num_threads(threads);
#endif
}

void* CpuBackend::allocate_bytes(size_t bytes) {
    const size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, rounded);
    return p;
}
void CpuBackend::release(void* ptr) { std::free(ptr); }
void CpuBackend::copy_to_device(void* dst, const void* src, size_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);  // an empty vector's data() may be null
}

void CpuBackend::upload(void* dst, const void* host_src, size_t bytes) {
    if (bytes > kUploadBytes) throw Error(upload_too_large(bytes));
    std::memcpy(dst, host_src, bytes);
}

uint64_t CpuBackend::copy_to_device_async(void* dst, const void* pinned_src, size_t bytes) {
    std::memcpy(dst, pinned_src, bytes);
    return 0;
}

void CpuBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
}
void CpuBackend::copy(void* dst, const void* src, size_t bytes) {
    if (bytes > 0) std::memmove(dst, src, bytes);
}

void CpuBackend::fill(float* x, size_t n, float value) { std::fill(x, x + n, value); }
void CpuBackend::scale(float* x, size_t n, float alpha) {
    for (size_t i = 0; i < n; ++i) x[i] *= alpha;
}

void CpuBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                      const float* b, int ldb, float beta, float* c, int ldc) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
        for (int i = 0; i < m; ++i) {
            float* row = c + static_cast<size_t>(i) * ldc;
            for (int j = 0; j < n; ++j) row[j] = beta == 0.0f ? 0.0f : row[j] * beta;
        }
        return;
    }
    if (cpu::small_gemm_pays(trans_a, trans_b, m, n, k)) {
        cpu::small_gemm(trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    // oneDNN's JIT sgemm: 5-20% faster than OpenBLAS's on the transformer's
    // 128-512-wide shapes here, and no separate pass zeroing C for beta 0.
    if (gemm_onednn_ && onednn_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k,
                alpha, a, lda, b, ldb, beta, c, ldc);
}

bool cpu_gemm_uses_onednn() {
    static const bool onednn = [] {
        const char* v = std::getenv("GPUTRAIN_CPU_GEMM");
        const std::string s = v ? v : "";
        if (s.empty() || s == "auto") return have_onednn();
        if (s == "openblas") return false;
        if (s == "onednn") {
            if (!have_onednn()) throw Error("environment variable GPUTRAIN_CPU_GEMM=onednn: this build has no oneDNN");
            return true;
        }
        throw Error("environment variable GPUTRAIN_CPU_GEMM='" + s + "': expected auto, onednn or openblas");
    }();
    return onednn;
}

std::string cpu_gemm_description() {
    const char* chosen = std::getenv("GPUTRAIN_CPU_GEMM");
    const std::string by = chosen && *chosen ? std::string(" (GPUTRAIN_CPU_GEMM=") + chosen + ")" : "";
    return std::string(cpu_gemm_uses_onednn() ? "oneDNN" : "OpenBLAS") + by +
           ", small shapes by gputrain's own kernel";
}

void CpuBackend::add_bias(float* y, const float* bias, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        float* row = y + static_cast<size_t>(r) * cols;
        for (int c = 0; c < cols; ++c) row[c] += bias[c];
    }
}

void CpuBackend::sum_rows(const float* dy, float* db, int rows, int cols) {
    std::fill(db, db + cols, 0.0f);
    for (int r = 0; r < rows; ++r) {
        const float* row = dy + static_cast<size_t>(r) * cols;
        for (int c = 0; c < cols; ++c) db[c] += row[c];
    }
}

void CpuBackend::softmax_forward(const float* x, float* y, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        const float* in = x + static_cast<size_t>(r) * cols;
        float* out = y + static_cast<size_t>(r) * cols;
        const float mx = *std::max_element(in, in + cols);
        float sum = 0.0f;
        for (int c = 0; c < cols; ++c) sum += (out[c] = std::exp(in[c] - mx));
        const float inv = 1.0f / sum;
        for (int c = 0; c < cols; ++c) out[c] *= inv;
    }
}

void CpuBackend::softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        const float* yr = y + static_cast<size_t>(r) * cols;
        const float* dyr = dy + static_cast<size_t>(r) * cols;
        float* dxr = dx + static_cast<size_t>(r) * cols;
        float dot = 0.0f;
        for (int c = 0; c < cols; ++c) dot += yr[c] * dyr[c];
        for (int c = 0; c < cols; ++c) dxr[c] = yr[c] * (dyr[c] - dot);
    }
}

void CpuBackend::dropout_forward(const float* x, float* y, float* mask_out, size_t n, float rate, uint64_t key,
                                 uint64_t first_index) {
    const float keep_scale = 1.0f / (1.0f - rate);
    for (size_t i = 0; i < n; ++i) {
        const float m = math::hash_uniform(key, first_index + i) >= rate ? keep_scale : 0.0f;
        mask_out[i] = m;
        y[i] = x[i] * m;
    }
}

const KernelTable& CpuBackend::kernels() const { return cpu_kernels::table(); }

// The per-row formulas are math.hpp's, as in the CUDA kernels (row_kernels.cu).
// Each row's exponentials once (math::exp_poly, summed in double over
// lanes: cpu/vector_math.hpp), kept in the gradient's row (or a scratch row)
// for the gradient's pass.
void CpuBackend::softmax_cross_entropy(const float* logits, const int32_t* labels, int rows, int cols,
                                       float grad_scale, float* grad, float* stats, float smoothing) {
    double loss = 0.0, correct = 0.0;
    thread_local std::vector<float> scratch;
    if (!grad) scratch.resize(static_cast<size_t>(std::max(cols, 0)));
    for (int r = 0; r < rows; ++r) {
        const float* in = logits + static_cast<size_t>(r) * cols;
        const int best = argmax_row(in, cols);
        const float mx = in[best];  // max_element's: the first of the largest
        const int label = labels[r];
        const bool valid = math::label_in_range(label, cols);
        // What the loss reads of the logits, before the row of exponentials
        // is written (into the gradient, which may be the logits' own row).
        const float z_label = valid ? in[label] : 0.0f;
        double shifted = 0.0;  // label smoothing's sum of z_c - m
        if (smoothing > 0.0f)
            for (int c = 0; c < cols; ++c) shifted += static_cast<double>(in[c] - mx);
        float* e = grad ? grad + static_cast<size_t>(r) * cols : scratch.data();
        const double sum = cpu::exp_shifted_sum(in, static_cast<size_t>(cols), mx, e);
        if (smoothing > 0.0f)
            loss += valid ? math::smoothed_xent_loss(sum, z_label, mx, shifted, smoothing, cols) : NAN;
        else
            loss += valid ? math::softmax_xent_loss(sum, z_label, mx) : NAN;
        correct += best == label ? 1.0 : 0.0;
        if (grad) {
            const float inv = static_cast<float>(1.0 / sum);
            if (smoothing > 0.0f)
                for (int c = 0; c < cols; ++c)
                    e[c] = math::smoothed_xent_grad_from_exp(e[c], inv, c == label, smoothing, cols, grad_scale);
            else
                for (int c = 0; c < cols; ++c) e[c] = math::softmax_xent_grad_from_exp(e[c], inv, c == label, grad_scale);
        }
    }
    stats[0] += static_cast<float>(loss);
    stats[1] += static_cast<float>(correct);
}

void CpuBackend::cross_entropy_probs(const float* probs, const int32_t* labels, int rows, int cols,
                                     float grad_scale, float* grad, float* stats, float smoothing) {
    double loss = 0.0, correct = 0.0;
    for (int r = 0; r < rows; ++r) {
        const float* p = probs + static_cast<size_t>(r) * cols;
        const int label = labels[r];
        const bool valid = math::label_in_range(label, cols);
        const float pl = valid ? p[label] : NAN;
        if (smoothing > 0.0f) {
            double row = 0.0;
            for (int c = 0; c < cols; ++c) row += math::smoothed_probs_xent_term(p[c], c == label, smoothing, cols);
            loss += valid ? row : NAN;
        } else {
            loss += math::probs_xent_loss(pl);
        }
        correct += argmax_row(p, cols) == label ? 1.0 : 0.0;
        if (grad) {
            float* g = grad + static_cast<size_t>(r) * cols;
            if (smoothing > 0.0f)
                for (int c = 0; c < cols; ++c)
                    g[c] = math::smoothed_probs_xent_grad(p[c], c == label, smoothing, cols, grad_scale);
            else
                for (int c = 0; c < cols; ++c) g[c] = math::probs_xent_grad(pl, c == label, grad_scale);
        }
    }
    stats[0] += static_cast<float>(loss);
    stats[1] += static_cast<float>(correct);
}

void CpuBackend::mean_squared_error(const float* y, const int32_t* labels, int rows, int cols, float grad_scale,
                                    float* grad, float* stats) {
    double loss = 0.0, correct = 0.0;
    for (int r = 0; r < rows; ++r) {
        const float* yr = y + static_cast<size_t>(r) * cols;
        const int label = labels[r];
        double row_sum = 0.0;
        for (int c = 0; c < cols; ++c) {
            const float diff = math::mse_diff(yr[c], c == label);
            row_sum += static_cast<double>(diff) * diff;
            if (grad) grad[static_cast<size_t>(r) * cols + c] = math::mse_grad(diff, cols, grad_scale);
        }
        loss += math::label_in_range(label, cols) ? row_sum / cols : NAN;
        correct += argmax_row(yr, cols) == label ? 1.0 : 0.0;
    }
    stats[0] += static_cast<float>(loss);
    stats[1] += static_cast<float>(correct);
}

void CpuBackend::regression_loss(const float* y, const float* targets, int rows, int cols, math::RegressionLoss kind,
                                 float delta, math::RegressionMetric metric, float grad_scale, float* grad,
                                 float* stats) {
    double loss = 0.0, metric_sum = 0.0;
    for (int r = 0; r < rows; ++r) {
        const size_t at = static_cast<size_t>(r) * cols;
        double row_loss = 0.0, row_metric = 0.0;
        for (int c = 0; c < cols; ++c) {
            const float diff = y[at + c] - targets[at + c];
            row_loss += math::regression_term(kind, diff, delta);
            row_metric += math::regression_metric_term(metric, diff);
            if (grad) grad[at + c] = math::regression_grad(kind, diff, delta, cols, grad_scale);
        }
        loss += row_loss / cols;
        metric_sum += row_metric / cols;
    }
    stats[0] += static_cast<float>(loss);
    stats[1] += static_cast<float>(metric_sum);
}

// The optimizer touches every parameter every step: compiled three times, for
// baseline x86-64, AVX2+FMA and AVX-512 (math::adam_update inlines into each;
// the same operations per element, so the same bits), picked at run time
// (cpu_features.hpp).
static void adam_loop_baseline(float* __restrict params, const float* __restrict grads, float* __restrict m,
                               float* __restrict v, size_t n, const math::AdamParams a) {
    for (size_t i = 0; i < n; ++i) math::adam_update(params[i], grads[i], m[i], v[i], a);
}
__attribute__((target("avx2,fma"))) static void adam_loop_avx2(float* __restrict params,
                                                                const float* __restrict grads, float* __restrict m,
                                                                float* __restrict v, size_t n,
                                                                const math::AdamParams a) {
    for (size_t i = 0; i < n; ++i) math::adam_update(params[i], grads[i], m[i], v[i], a);
}

[[gnu::target("avx2,fma,avx512f,avx512vl,avx512dq,avx512bw,prefer-vector-width=512")]] static void adam_loop_avx512(
    float* __restrict params, const float* __restrict grads, float* __restrict m, float* __restrict v, size_t n,
    const math::AdamParams a) {
    for (size_t i = 0; i < n; ++i) math::adam_update(params[i], grads[i], m[i], v[i], a);
}

void CpuBackend::adam_step(float* params, const float* grads, float* m, float* v, size_t n,
                           const math::AdamParams& a) {
    if (cpu::has_avx512())
        adam_loop_avx512(params, grads, m, v, n, a);
    else if (cpu::has_avx2_fma())
        adam_loop_avx2(params, grads, m, v, n, a);
    else
        adam_loop_baseline(params, grads, m, v, n, a);
}

void CpuBackend::adam_step_guarded(float* params, const float* grads, float* m, float* v, size_t n,
                                   const math::AdamParams* a, const int32_t* skip) {
    if (skip && *skip != 0) return;
    adam_step(params, grads, m, v, n, *a);
}

void CpuBackend::sgd_step_guarded(float* params, const float* grads, float* velocity, size_t n,
                                  const math::SgdParams* s, const int32_t* skip) {
    if (skip && *skip != 0) return;
    sgd_step(params, grads, velocity, n, *s);
}

void CpuBackend::sgd_step(float* params, const float* grads, float* velocity, size_t n, const math::SgdParams& s) {
    if (s.momentum == 0.0f) {
        for (size_t i = 0; i < n; ++i) params[i] -= s.learning_rate * grads[i];
        return;
    }
    for (size_t i = 0; i < n; ++i) math::sgd_momentum_update(params[i], grads[i], velocity[i], s);
}

}  // namespace gputrain
