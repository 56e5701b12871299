// The bias and activation that end a dense or conv2d layer, applied over rows
// of `cols` values (softmax is row-wise: over the units, or a pixel's
// channels). With `fused` (RunContext::fused, training.fused_kernels) an
// element-wise activation and its bias go through one backend pass each way
// (Backend::bias_activation_forward, activation_bias_backward); the results
// are the same bit for bit either way.
#pragma once

#include "backend/backend.hpp"

namespace gputrain::nn {

// z += bias (none when bias is null), then y = act(z). For Activation::linear
// z must be y (the layer writes its output directly).
void bias_activation_step_forward(Backend& backend, Activation act, float* z, const float* bias, float* y, int rows,
                                  int cols, bool fused);
// dz from z, y = act(z) and dy, then db = column sums of dz (none when db is
// null). dz may be z (z is not needed once its derivative is taken); for
// Activation::linear dz is dy itself and dz_out is not written, so the
// caller reads the gradient from the returned pointer.
const float* activation_bias_step_backward(Backend& backend, Activation act, const float* z, const float* y,
                                           const float* dy, float* dz_out, float* db, int rows, int cols, bool fused);

}  // namespace gputrain::nn
