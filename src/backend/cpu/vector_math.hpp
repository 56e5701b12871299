// Element-wise loops of the CPU kernels that GCC vectorizes (math.hpp's
// polynomials, no libm calls), each built twice: for x86-64's SSE2 and for
// CPUs with AVX2 and FMA, picked at run time.
#pragma once

#include <cstddef>

namespace gputrain::cpu {

// One row of causal attention's scores: x[i] = softmax(x[0..n))[i] for i < n
// (exp by math::exp_poly after subtracting the row's maximum; their sum over
// eight lanes, element i in lane i % 8, the lanes added pairwise at the end),
// x[i] = 0 for n <= i < width. Returns the row's log-sum-exp. n >= 1.
float softmax_row(float* x, size_t n, size_t width);

// out[i] = exp(x[i] - shift) for i < n (math::exp_poly; out may be x);
// returns their sum in double over eight lanes, as softmax_row's.
double exp_shifted_sum(const float* x, size_t n, float shift, float* out);

// The sum of a[i] * b[i] for i < n, over eight lanes as softmax_row's sum.
float dot(const float* a, const float* b, size_t n);

// dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols.
void transpose(const float* src, size_t ld_src, size_t rows, size_t cols, float* dst, size_t ld_dst);

// p[i] = exp(p[i] - shift); ds[i] = p[i] * (ds[i] - delta): attention's
// backward pass over one row of scores.
void softmax_grad_row(float* p, float* ds, size_t n, float shift, float delta);

// The sum of x[i]^2 for i < n, in double, over eight lanes (element i in lane
// i % 8; the lanes added pairwise at the end): no chain of dependent adds
// (training.clip_norm's norm over every gradient each step), the same bits on both builds.
double sum_of_squares(const float* x, size_t n);

}  // namespace gputrain::cpu
