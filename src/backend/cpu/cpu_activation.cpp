// CpuBackend's element-wise activation passes: the plain ones
// (activation_forward, activation_backward) and the fused ones that take a
// layer's bias in the same sweep (bias_activation_forward: z += bias, y = a(z);
// activation_bias_backward: dz = dy * a'(z), db = column sums of dz). Each loop
// is compiled once per activation (math::activate<A>, math::activation_grad<A>).
// The fused passes do the same operations in the same order as add_bias +
// activation_forward and activation_backward + sum_rows, so the results are
// the same bit for bit (tests/unit/backend/test_fused_passes.cpp).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/cpu_features.hpp"

namespace gputrain {

namespace {

template <Activation A>
[[gnu::always_inline]] inline void activate_all_impl(const float* x, float* y, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] = math::activate<A>(x[i]);
}

// dx = dy * a'(z, y). The gradient in a local of its own: GCC then vectorizes
// the loop (for relu written inline it keeps a branch: 5.3 ms against 0.3 ms
// on the 32x28x28x32 output of the CNN's first conv, random signs).
template <Activation A>
[[gnu::always_inline]] inline void activation_grad_all_impl(const float* z, const float* y, const float* dy, float* dx, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float grad = math::activation_grad<A>(z[i], y[i]);
        dx[i] = dy[i] * grad;
    }
}

template <Activation A>
[[gnu::always_inline]] inline void bias_activation_rows_impl(float* z, const float* bias, float* y, int rows, int cols) {
    if (z == y) {  // in place (a relu layer keeps no z): one array, which GCC vectorizes without an alias check
        for (int r = 0; r < rows; ++r) {
            float* yr = y + static_cast<size_t>(r) * cols;
            for (int c = 0; c < cols; ++c) yr[c] = math::activate<A>(yr[c] + bias[c]);
        }
        return;
    }
    for (int r = 0; r < rows; ++r) {
        float* zr = z + static_cast<size_t>(r) * cols;
        float* yr = y + static_cast<size_t>(r) * cols;
        for (int c = 0; c < cols; ++c) {
            const float v = zr[c] + bias[c];
            zr[c] = v;
            yr[c] = math::activate<A>(v);
        }
    }
}

template <Activation A>
[[gnu::always_inline]] inline void activation_bias_grad_rows_impl(const float* z, const float* y, const float* dy, float* dz, float* db, int rows,
                               int cols) {
    std::fill(db, db + cols, 0.0f);
    for (int r = 0; r < rows; ++r) {
        const size_t offset = static_cast<size_t>(r) * cols;
        const float* zr = z + offset;
        const float* yr = y + offset;
        const float* dyr = dy + offset;
        float* dzr = dz + offset;
        for (int c = 0; c < cols; ++c) {
            const float grad = math::activation_grad<A>(zr[c], yr[c]);
            const float d = dyr[c] * grad;
            dzr[c] = d;
            db[c] += d;
        }
    }
}

// Each loop three times: as built (x86-64's SSE2), for CPUs with AVX2 and FMA,
// and for those with AVX-512, picked by cpu::has_avx512() / has_avx2_fma().
// Only GELU takes the wider ones: its polynomials (math::normal_cdf) run
// 8 or 16 floats at a time (forward 8.5, 2.8 and 1.6 ns an element on a
// Xeon with AVX-512; the others are memory-bound). Each element's arithmetic
// is the same in both wide ones (FMA contracted in each): their outputs
// agreed bit for bit on 7,000 inputs in [-9, 9].
#define GPUTRAIN_DISPATCH(NAME, PARAMS, ARGS)                                                        \
    template <Activation A>                                                                          \
    void NAME##_sse PARAMS { NAME##_impl<A> ARGS; }                                                  \
    template <Activation A>                                                                          \
    [[gnu::target("avx2,fma")]] void NAME##_avx2 PARAMS { NAME##_impl<A> ARGS; }                      \
    template <Activation A>                                                                          \
    [[gnu::target("avx2,fma,avx512f,avx512vl,avx512dq,avx512bw,prefer-vector-width=512")]] void       \
        NAME##_avx512 PARAMS { NAME##_impl<A> ARGS; }                                                \
    template <Activation A>                                                                          \
    void NAME PARAMS {                                                                               \
        if (A == Activation::gelu && cpu::has_avx512()) NAME##_avx512<A> ARGS;                       \
        else if (A == Activation::gelu && cpu::has_avx2_fma()) NAME##_avx2<A> ARGS;                  \
        else NAME##_sse<A> ARGS;                                                                     \
    }

GPUTRAIN_DISPATCH(activate_all, (const float* x, float* y, size_t n), (x, y, n))
GPUTRAIN_DISPATCH(activation_grad_all, (const float* z, const float* y, const float* dy, float* dx, size_t n),
                  (z, y, dy, dx, n))
GPUTRAIN_DISPATCH(bias_activation_rows, (float* z, const float* bias, float* y, int rows, int cols),
                  (z, bias, y, rows, cols))
GPUTRAIN_DISPATCH(activation_bias_grad_rows,
                  (const float* z, const float* y, const float* dy, float* dz, float* db, int rows, int cols),
                  (z, y, dy, dz, db, rows, cols))
#undef GPUTRAIN_DISPATCH

size_t elements(int rows, int cols) { return rows <= 0 || cols <= 0 ? 0 : static_cast<size_t>(rows) * cols; }

}  // namespace

void CpuBackend::activation_forward(Activation a, const float* x, float* y, size_t n) {
    if (a == Activation::linear) {
        if (x != y) std::memcpy(y, x, n * sizeof(float));
        return;
    }
    // Callers route softmax to softmax_forward (our invariant, not user input).
    if (!with_elementwise_activation(a, [&](auto kind) { activate_all<decltype(kind)::value>(x, y, n); }))
        std::abort();
}

void CpuBackend::activation_backward(Activation a, const float* x, const float* y, const float* dy, float* dx,
                                     size_t n) {
    if (a == Activation::linear) {
        if (dy != dx) std::memcpy(dx, dy, n * sizeof(float));
        return;
    }
    if (!with_elementwise_activation(
            a, [&](auto kind) { activation_grad_all<decltype(kind)::value>(x, y, dy, dx, n); }))
        std::abort();
}

void CpuBackend::bias_activation_forward(Activation a, float* z, const float* bias, float* y, int rows, int cols) {
    const bool elementwise = with_elementwise_activation(a, [&](auto kind) {
        constexpr Activation kind_value = decltype(kind)::value;
        if (bias)
            bias_activation_rows<kind_value>(z, bias, y, std::max(rows, 0), cols);
        else
            activate_all<kind_value>(z, y, elements(rows, cols));
    });
    if (!elementwise) throw Error(not_elementwise(name(), "bias_activation_forward", a));
}

void CpuBackend::activation_bias_backward(Activation a, const float* z, const float* y, const float* dy, float* dz,
                                          float* db, int rows, int cols) {
    const bool elementwise = with_elementwise_activation(a, [&](auto kind) {
        constexpr Activation kind_value = decltype(kind)::value;
        if (!db)
            activation_grad_all<kind_value>(z, y, dy, dz, elements(rows, cols));
        else if (cols > 0)  // 0 rows still writes db = 0, as sum_rows does
            activation_bias_grad_rows<kind_value>(z, y, dy, dz, db, std::max(rows, 0), cols);
    });
    if (!elementwise) throw Error(not_elementwise(name(), "activation_bias_backward", a));
}

}  // namespace gputrain
