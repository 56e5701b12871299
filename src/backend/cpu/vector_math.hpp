// Element-wise loops of the CPU kernels that GCC vectorizes (math.hpp's
// polynomials, no libm calls), each built twice: for x86-64's SSE2 and for
// CPUs with AVX2 and FMA, picked at run time.
#pragma once

#include <cstddef>

namespace gputrain::cpu {

// x[i] = exp(x[i] - shift) for i < n (math::exp_poly); returns their sum
// (in float, in index order).
float exp_shifted_sum(float* x, size_t n, float shift);

// p[i] = exp(p[i] - shift); ds[i] = p[i] * (ds[i] - delta): attention's
// backward pass over one row of scores.
void softmax_grad_row(float* p, float* ds, size_t n, float shift, float delta);

// The sum of x[i]^2 for i < n, in double, over eight lanes (element i in lane
// i % 8; the lanes added pairwise at the end): no chain of dependent adds
// (training.clip_norm's norm over every gradient each step), the same bits on both builds.
double sum_of_squares(const float* x, size_t n);

}  // namespace gputrain::cpu
