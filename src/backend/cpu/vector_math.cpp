#include "backend/cpu/vector_math.hpp"

#include "backend/cpu/cpu_features.hpp"
#include "backend/math.hpp"

namespace gputrain::cpu {

namespace {

[[gnu::always_inline]] inline void exp_shifted_impl(float* x, size_t n, float shift) {
    for (size_t i = 0; i < n; ++i) x[i] = math::exp_poly(x[i] - shift);
}
void exp_shifted_sse(float* x, size_t n, float shift) { exp_shifted_impl(x, n, shift); }
[[gnu::target("avx2,fma")]] void exp_shifted_avx2(float* x, size_t n, float shift) { exp_shifted_impl(x, n, shift); }

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

float exp_shifted_sum(float* x, size_t n, float shift) {
    if (has_avx2_fma()) exp_shifted_avx2(x, n, shift);
    else exp_shifted_sse(x, n, shift);
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += x[i];
    return sum;
}

void softmax_grad_row(float* p, float* ds, size_t n, float shift, float delta) {
    if (has_avx2_fma()) softmax_grad_avx2(p, ds, n, shift, delta);
    else softmax_grad_sse(p, ds, n, shift, delta);
}

}  // namespace gputrain::cpu
