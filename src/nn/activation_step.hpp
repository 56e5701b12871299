// The activation that ends a dense or conv2d layer, applied over rows of
// `cols` values (softmax is row-wise: over the units, or a pixel's channels).
#pragma once

#include "backend/backend.hpp"

namespace gputrain::nn {

// y = act(z). Not for Activation::linear (the layer writes y directly).
void activation_step_forward(Backend& backend, Activation act, const float* z, float* y, int rows, int cols);
// dz from z, y = act(z) and dy; dz may be z (z is not needed once its derivative is taken).
void activation_step_backward(Backend& backend, Activation act, const float* z, const float* y, const float* dy,
                              float* dz, int rows, int cols);

}  // namespace gputrain::nn
