// CpuBackend's fused passes: a layer's bias add with its activation, and the
// activation's gradient with the bias gradient, each in one sweep over the
// matrix instead of two. Same operations in the same order as add_bias +
// activation_forward and activation_backward + sum_rows, so the results are
// the same bit for bit (tests/unit/backend/test_fused_passes.cpp).
#include <algorithm>

#include "backend/cpu/cpu_backend.hpp"

namespace gputrain {

namespace {

template <Activation A>
void bias_activation_rows(float* z, const float* bias, float* y, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        float* zr = z + static_cast<size_t>(r) * cols;
        float* yr = y + static_cast<size_t>(r) * cols;
        if (bias) {
            for (int c = 0; c < cols; ++c) {
                const float v = zr[c] + bias[c];
                zr[c] = v;
                yr[c] = math::activate<A>(v);
            }
        } else {
            for (int c = 0; c < cols; ++c) yr[c] = math::activate<A>(zr[c]);
        }
    }
}

template <Activation A>
void activation_bias_grad_rows(const float* z, const float* y, const float* dy, float* dz, float* db, int rows,
                               int cols) {
    if (db) std::fill(db, db + cols, 0.0f);
    for (int r = 0; r < rows; ++r) {
        const size_t offset = static_cast<size_t>(r) * cols;
        const float* zr = z + offset;
        const float* yr = y + offset;
        const float* dyr = dy + offset;
        float* dzr = dz + offset;
        // The gradient in a local of its own, so that GCC vectorizes (see
        // CpuBackend::activation_backward).
        if (db) {
            for (int c = 0; c < cols; ++c) {
                const float grad = math::activation_grad<A>(zr[c], yr[c]);
                const float d = dyr[c] * grad;
                dzr[c] = d;
                db[c] += d;
            }
        } else {
            for (int c = 0; c < cols; ++c) {
                const float grad = math::activation_grad<A>(zr[c], yr[c]);
                dzr[c] = dyr[c] * grad;
            }
        }
    }
}

}  // namespace

void CpuBackend::bias_activation_forward(Activation a, float* z, const float* bias, float* y, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    const bool elementwise =
        with_elementwise_activation(a, [&](auto kind) { bias_activation_rows<decltype(kind)::value>(z, bias, y, rows, cols); });
    if (!elementwise) throw Error(name() + ": bias_activation_forward: " + activation_name(a) + " is not element-wise");
}

void CpuBackend::activation_bias_backward(Activation a, const float* z, const float* y, const float* dy, float* dz,
                                          float* db, int rows, int cols) {
    if (cols <= 0) return;
    rows = std::max(rows, 0);  // 0 rows still writes db = 0, as sum_rows does
    const bool elementwise = with_elementwise_activation(
        a, [&](auto kind) { activation_bias_grad_rows<decltype(kind)::value>(z, y, dy, dz, db, rows, cols); });
    if (!elementwise)
        throw Error(name() + ": activation_bias_backward: " + activation_name(a) + " is not element-wise");
}

}  // namespace gputrain
