#include "nn/activation_step.hpp"

namespace gputrain::nn {

void activation_step_forward(Backend& backend, Activation act, const float* z, float* y, int rows, int cols) {
    if (act == Activation::softmax)
        backend.softmax_forward(z, y, rows, cols);
    else
        backend.activation_forward(act, z, y, static_cast<size_t>(rows) * cols);
}

void activation_step_backward(Backend& backend, Activation act, const float* z, const float* y, const float* dy,
                              float* dz, int rows, int cols) {
    if (act == Activation::softmax)
        backend.softmax_backward(y, dy, dz, rows, cols);
    else
        backend.activation_backward(act, z, y, dy, dz, static_cast<size_t>(rows) * cols);
}

}  // namespace gputrain::nn
