#include "nn/activation_step.hpp"

namespace gputrain::nn {

void bias_activation_step_forward(Backend& backend, Activation act, float* z, const float* bias, float* y, int rows,
                                  int cols, bool fused) {
    const bool elementwise = is_elementwise(act);
    if (fused && elementwise) {
        backend.bias_activation_forward(act, z, bias, y, rows, cols);
        return;
    }
    if (bias) backend.add_bias(z, bias, rows, cols);
    if (act == Activation::softmax)
        backend.softmax_forward(z, y, rows, cols);
    else if (elementwise)
        backend.activation_forward(act, z, y, static_cast<size_t>(rows) * cols);
}

const float* activation_bias_step_backward(Backend& backend, Activation act, const float* z, const float* y,
                                           const float* dy, float* dz_out, float* db, int rows, int cols, bool fused) {
    const bool elementwise = is_elementwise(act);
    if (fused && elementwise) {
        backend.activation_bias_backward(act, z, y, dy, dz_out, db, rows, cols);
        return dz_out;
    }
    const float* dz = dy;
    if (act == Activation::softmax) {
        backend.softmax_backward(y, dy, dz_out, rows, cols);
        dz = dz_out;
    } else if (elementwise) {
        backend.activation_backward(act, z, y, dy, dz_out, static_cast<size_t>(rows) * cols);
        dz = dz_out;
    }
    if (db) backend.sum_rows(dz, db, rows, cols);
    return dz;
}

}  // namespace gputrain::nn
