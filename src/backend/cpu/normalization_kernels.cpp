// The CPU's kernels of backend/ops/normalization.hpp. Row statistics are
// two-pass sums in double (the mean, then the squares around it), so rows of
// many columns or a large mean against a small spread stay accurate; the
// per-element arithmetic is float, in the same expressions as the CUDA kernels.
#include <cmath>
#include <cstddef>
#include <vector>

#include "backend/cpu/cpu_features.hpp"
#include "backend/cpu/cpu_kernels.hpp"
#include "backend/ops/normalization.hpp"

namespace gputrain::cpu_kernels {

namespace {

constexpr size_t kLanes = 8;

// Sums over c < n of terms(c, acc) adding to acc[0..kLanes), lane c % kLanes.
template <size_t Sums, class Terms>
[[gnu::always_inline]] inline void lane_sums(size_t n, double (&out)[Sums], Terms terms) {
    double acc[Sums][kLanes] = {};
    size_t c = 0;
    for (; c + kLanes <= n; c += kLanes)
        for (size_t l = 0; l < kLanes; ++l) terms(c + l, l, acc);
    for (size_t l = 0; c < n; ++c, ++l) terms(c, l, acc);
    for (size_t s = 0; s < Sums; ++s) {
        const double* a = acc[s];
        out[s] = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    }
}
static_assert(kLanes == 8, "lane_sums adds eight lanes");

[[gnu::always_inline]] inline void layer_norm_forward_impl(const ops::LayerNormForward& op) {
    if (op.rows <= 0 || op.cols <= 0) return;
    const size_t cols = static_cast<size_t>(op.cols);
    for (size_t r = 0; r < static_cast<size_t>(op.rows); ++r) {
        const float* x = op.x + r * cols;
        float* y = op.y + r * cols;
        double mean = 0.0;
        if (!op.rms) {
            double sum[1];
            lane_sums(cols, sum, [&](size_t c, size_t l, double (&acc)[1][kLanes]) { acc[0][l] += x[c]; });
            mean = sum[0] / static_cast<double>(cols);
        }
        double sq[1];  // around the mean (rms: around 0)
        lane_sums(cols, sq, [&](size_t c, size_t l, double (&acc)[1][kLanes]) {
            const double d = static_cast<double>(x[c]) - mean;
            acc[0][l] += d * d;
        });
        const double squares = sq[0];
        const float rstd =
            static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(cols) + static_cast<double>(op.epsilon)));
        const float m = static_cast<float>(mean);
        if (!op.rms) op.mean[r] = m;
        op.rstd[r] = rstd;
        for (size_t c = 0; c < cols; ++c) {
            const float xhat = (x[c] - m) * rstd;  // m is 0 with rms
            const float scaled = op.gamma ? xhat * op.gamma[c] : xhat;
            y[c] = op.beta ? scaled + op.beta[c] : scaled;
        }
    }
}

[[gnu::always_inline]] inline void layer_norm_backward_impl(const ops::LayerNormBackward& op) {
    const size_t cols = op.cols > 0 ? static_cast<size_t>(op.cols) : 0;
    const size_t rows = op.rows > 0 ? static_cast<size_t>(op.rows) : 0;
    // Column sums in double, row by row: dgamma's in [0, cols), dbeta's after.
    const bool column_sums = op.dgamma || op.dbeta;
    thread_local std::vector<double> sums;
    sums.assign(column_sums ? 2 * cols : 0, 0.0);
    double* dgamma_sum = sums.data();
    double* dbeta_sum = dgamma_sum + cols;
    for (size_t r = 0; r < rows; ++r) {
        const float* x = op.x + r * cols;
        const float* dy = op.dy + r * cols;
        const float m = op.rms ? 0.0f : op.mean[r];
        const float rstd = op.rstd[r];
        if (!op.dx) {
            if (column_sums)
                for (size_t c = 0; c < cols; ++c) {
                    const float xhat = (x[c] - m) * rstd;
                    dgamma_sum[c] += static_cast<double>(dy[c] * xhat);
                    dbeta_sum[c] += static_cast<double>(dy[c]);
                }
            continue;
        }
        // One pass for the column sums and the row's sums of g and of g * xhat
        // (lane c % kLanes, as lane_sums adds them), in plain local arrays and
        // with the tests of gamma and of the column sums outside the loop, so
        // that the compiler vectorizes it.
        double a0[kLanes] = {}, a1[kLanes] = {};
        const auto add_row = [&](const float* gamma, bool with_columns) {
            const auto term = [&](size_t c, size_t l) {
                const float xhat = (x[c] - m) * rstd;
                const float g = gamma ? dy[c] * gamma[c] : dy[c];
                a0[l] += static_cast<double>(g);
                a1[l] += static_cast<double>(g * xhat);
                if (with_columns) {
                    dgamma_sum[c] += static_cast<double>(dy[c] * xhat);
                    dbeta_sum[c] += static_cast<double>(dy[c]);
                }
            };
            size_t c = 0;
            for (; c + kLanes <= cols; c += kLanes)
                for (size_t l = 0; l < kLanes; ++l) term(c + l, l);
            for (size_t l = 0; c < cols; ++c, ++l) term(c, l);
        };
        if (op.gamma) {
            if (column_sums) add_row(op.gamma, true);
            else add_row(op.gamma, false);
        } else {
            if (column_sums) add_row(nullptr, true);
            else add_row(nullptr, false);
        }
        const auto lanes = [](const double* a) { return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])); };
        const double sum_g = lanes(a0), sum_gx = lanes(a1);
        const float mean_g = op.rms ? 0.0f : static_cast<float>(sum_g / static_cast<double>(cols));
        const float mean_gx = static_cast<float>(sum_gx / static_cast<double>(cols));
        float* dx = op.dx + r * cols;
        for (size_t c = 0; c < cols; ++c) {
            const float xhat = (x[c] - m) * rstd;
            const float g = op.gamma ? dy[c] * op.gamma[c] : dy[c];
            dx[c] = rstd * (g - mean_g - xhat * mean_gx);
        }
    }
    for (size_t c = 0; c < cols; ++c) {
        if (op.dgamma) op.dgamma[c] = static_cast<float>(dgamma_sum[c]);
        if (op.dbeta) op.dbeta[c] = static_cast<float>(dbeta_sum[c]);
    }
}

// Each built for x86-64's SSE2 and for AVX2 (the double sums 4 wide), picked
// at run time: the same operations in the same order, so the same bits. (An
// AVX-512 build, 8 wide, measured no faster on the GPTs' 128 columns.)
void layer_norm_forward_sse(const ops::LayerNormForward& op) { layer_norm_forward_impl(op); }
[[gnu::target("avx2,fma")]] void layer_norm_forward_avx2(const ops::LayerNormForward& op) {
    layer_norm_forward_impl(op);
}
void layer_norm_forward(Backend&, const ops::LayerNormForward& op) {
    if (cpu::has_avx2_fma()) layer_norm_forward_avx2(op);
    else layer_norm_forward_sse(op);
}
void layer_norm_backward_sse(const ops::LayerNormBackward& op) { layer_norm_backward_impl(op); }
[[gnu::target("avx2,fma")]] void layer_norm_backward_avx2(const ops::LayerNormBackward& op) {
    layer_norm_backward_impl(op);
}
void layer_norm_backward(Backend&, const ops::LayerNormBackward& op) {
    if (cpu::has_avx2_fma()) layer_norm_backward_avx2(op);
    else layer_norm_backward_sse(op);
}

}  // namespace

void add_normalization(KernelTable& table) {
    table.add<ops::LayerNormForward, &layer_norm_forward>();
    table.add<ops::LayerNormBackward, &layer_norm_backward>();
}

}  // namespace gputrain::cpu_kernels
