#include "backend/cpu/vector_math.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_features.hpp"
#include "backend/math.hpp"

namespace gputrain::cpu {

namespace {

// The eight lanes' sum, pairwise.
[[gnu::always_inline]] inline float lanes_sum(const float* acc) {
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

[[gnu::always_inline]] inline float softmax_row_impl(float* x, size_t n, size_t width) {
    float top[8];
    for (size_t l = 0; l < 8; ++l) top[l] = x[std::min(l, n - 1)];
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t l = 0; l < 8; ++l) top[l] = std::max(top[l], x[i + l]);
    for (size_t l = 0; i + l < n; ++l) top[l] = std::max(top[l], x[i + l]);
    const float mx = std::max(std::max(std::max(top[0], top[1]), std::max(top[2], top[3])),
                              std::max(std::max(top[4], top[5]), std::max(top[6], top[7])));
    float acc[8] = {};
    i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t l = 0; l < 8; ++l) {
            const float e = math::exp_poly(x[i + l] - mx);
            x[i + l] = e;
            acc[l] += e;
        }
    for (size_t l = 0; i + l < n; ++l) {
        const float e = math::exp_poly(x[i + l] - mx);
        x[i + l] = e;
        acc[l] += e;
    }
    const float sum = lanes_sum(acc), inv = 1.0f / sum;
    for (i = 0; i < n; ++i) x[i] *= inv;
    for (; i < width; ++i) x[i] = 0.0f;
    return mx + std::log(sum);
}
float softmax_row_sse(float* x, size_t n, size_t width) { return softmax_row_impl(x, n, width); }
[[gnu::target("avx2,fma")]] float softmax_row_avx2(float* x, size_t n, size_t width) {
    return softmax_row_impl(x, n, width);
}

[[gnu::always_inline]] inline double exp_shifted_sum_impl(const float* x, size_t n, float shift, float* out) {
    double acc[8] = {};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t l = 0; l < 8; ++l) {
            const float e = math::exp_poly(x[i + l] - shift);
            out[i + l] = e;
            acc[l] += static_cast<double>(e);
        }
    for (size_t l = 0; i + l < n; ++l) {
        const float e = math::exp_poly(x[i + l] - shift);
        out[i + l] = e;
        acc[l] += static_cast<double>(e);
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
double exp_shifted_sum_sse(const float* x, size_t n, float shift, float* out) {
    return exp_shifted_sum_impl(x, n, shift, out);
}
[[gnu::target("avx2,fma")]] double exp_shifted_sum_avx2(const float* x, size_t n, float shift, float* out) {
    return exp_shifted_sum_impl(x, n, shift, out);
}

[[gnu::always_inline]] inline float dot_impl(const float* a, const float* b, size_t n) {
    float acc[8] = {};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
    for (size_t l = 0; i + l < n; ++l) acc[l] += a[i + l] * b[i + l];
    return lanes_sum(acc);
}
float dot_sse(const float* a, const float* b, size_t n) { return dot_impl(a, b, n); }
[[gnu::target("avx2,fma")]] float dot_avx2(const float* a, const float* b, size_t n) { return dot_impl(a, b, n); }

void transpose_plain(const float* src, size_t ld_src, size_t r0, size_t rows, size_t c0, size_t cols, float* dst,
                     size_t ld_dst) {
    for (size_t r = r0; r < rows; ++r)
        for (size_t c = c0; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
}

// 8 x 8 blocks in registers, the edges element by element.
[[gnu::target("avx2,fma")]] void transpose_avx2(const float* src, size_t ld_src, size_t rows, size_t cols, float* dst,
                                                size_t ld_dst) {
    const size_t rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
    for (size_t r = 0; r < rows8; r += 8)
        for (size_t c = 0; c < cols8; c += 8) {
            __m256 v[8];
            for (int i = 0; i < 8; ++i) v[i] = _mm256_loadu_ps(src + (r + i) * ld_src + c);
            const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
            const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
            const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
            const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
            const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            const __m256 out[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                                   _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                                   _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                                   _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
            for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + (c + i) * ld_dst + r, out[i]);
        }
    transpose_plain(src, ld_src, 0, rows8, cols8, cols, dst, ld_dst);
    transpose_plain(src, ld_src, rows8, rows, 0, cols, dst, ld_dst);
}

[[gnu::always_inline]] inline void softmax_grad_impl(float* __restrict p, float* __restrict ds, size_t n, float shift,
                                                      float delta) {
    for (size_t i = 0; i < n; ++i) {
        const float e = math::exp_poly(p[i] - shift);
        p[i] = e;
        ds[i] = e * (ds[i] - delta);
    }
}
void softmax_grad_sse(float* p, float* ds, size_t n, float shift, float delta) {
    softmax_grad_impl(p, ds, n, shift, delta);
}
[[gnu::target("avx2,fma")]] void softmax_grad_avx2(float* p, float* ds, size_t n, float shift, float delta) {
    softmax_grad_impl(p, ds, n, shift, delta);
}

[[gnu::always_inline]] inline double sum_of_squares_impl(const float* x, size_t n) {
    double acc[8] = {};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t l = 0; l < 8; ++l) acc[l] += static_cast<double>(x[i + l]) * static_cast<double>(x[i + l]);
    for (size_t l = 0; i < n; ++i, ++l) acc[l] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
double sum_of_squares_sse(const float* x, size_t n) { return sum_of_squares_impl(x, n); }
[[gnu::target("avx2,fma")]] double sum_of_squares_avx2(const float* x, size_t n) { return sum_of_squares_impl(x, n); }

}  // namespace

double sum_of_squares(const float* x, size_t n) {
    return has_avx2_fma() ? sum_of_squares_avx2(x, n) : sum_of_squares_sse(x, n);
}

float softmax_row(float* x, size_t n, size_t width) {
    return has_avx2_fma() ? softmax_row_avx2(x, n, width) : softmax_row_sse(x, n, width);
}

double exp_shifted_sum(const float* x, size_t n, float shift, float* out) {
    return has_avx2_fma() ? exp_shifted_sum_avx2(x, n, shift, out) : exp_shifted_sum_sse(x, n, shift, out);
}

float dot(const float* a, const float* b, size_t n) { return has_avx2_fma() ? dot_avx2(a, b, n) : dot_sse(a, b, n); }

void transpose(const float* src, size_t ld_src, size_t rows, size_t cols, float* dst, size_t ld_dst) {
    if (has_avx2_fma()) transpose_avx2(src, ld_src, rows, cols, dst, ld_dst);
    else transpose_plain(src, ld_src, 0, rows, 0, cols, dst, ld_dst);
}

void softmax_grad_row(float* p, float* ds, size_t n, float shift, float delta) {
    if (has_avx2_fma()) softmax_grad_avx2(p, ds, n, shift, delta);
    else softmax_grad_sse(p, ds, n, shift, delta);
}

}  // namespace gputrain::cpu
