// Launchers for the CUDA backend's kernels (kernels.cu). Each enqueues its
// kernel on `stream` and returns the launch status (cudaGetLastError), which
// the caller checks. Sizes of 0 launch nothing. Arguments mirror the Backend
// methods of the same name; pointers are device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/activation.hpp"
#include "backend/math.hpp"

namespace gputrain::cuda_kernels {

cudaError_t fill(cudaStream_t stream, float* x, size_t n, float value);
cudaError_t scale(cudaStream_t stream, float* x, size_t n, float alpha);
// c[r, j] *= beta for j < cols (row stride ld); beta == 0 writes 0 whatever c held.
cudaError_t scale_matrix(cudaStream_t stream, float* c, int rows, int cols, int ld, float beta);

// y[i] = x[i] rounded to bfloat16 / IEEE half (nearest, ties to even) for
// i < n; y is 2-byte aligned device memory (cast_kernels.cu).
cudaError_t cast_to_bf16(cudaStream_t stream, const float* x, void* y, size_t n);
cudaError_t cast_to_fp16(cudaStream_t stream, const float* x, void* y, size_t n);

// The activations and bias passes (activation_kernels.cu). Column sums reduce over row chunks into
// `scratch` (scratch_floats floats of device memory the backend owns) as the
// batch-norm sums do (column_sums.cuh): the same on every run.
cudaError_t add_bias(cudaStream_t stream, float* y, const float* bias, int rows, int cols);
cudaError_t sum_rows(cudaStream_t stream, const float* dy, float* db, int rows, int cols, float* scratch,
                     size_t scratch_floats);
// Backend::bias_activation_forward and activation_bias_backward: `a` is
// relu, sigmoid, tanh or gelu (cudaErrorInvalidValue otherwise). The sums
// of activation_bias_backward are chunked exactly as sum_rows chunks them.
cudaError_t bias_activation_forward(cudaStream_t stream, Activation a, float* z, const float* bias, float* y,
                                    int rows, int cols);
cudaError_t activation_bias_backward(cudaStream_t stream, Activation a, const float* z, const float* y,
                                     const float* dy, float* dz, float* db, int rows, int cols, float* scratch,
                                     size_t scratch_floats);
// bias_activation_forward that also writes y rounded to 16 bits (bf16, else
// fp16) into y_copy, rounded as cast_to_bf16/cast_to_fp16 round.
cudaError_t bias_activation_forward_copy(cudaStream_t stream, Activation a, float* z, const float* bias, float* y,
                                         void* y_copy, bool bf16, int rows, int cols);
// The same gradient written only as a 16-bit copy (bf16, else fp16), rounded
// as cast_to_bf16/cast_to_fp16 round; db (when not null) summed from the fp32 values.
cudaError_t activation_bias_backward_copy(cudaStream_t stream, Activation a, const float* z, const float* y,
                                          const float* dy, void* dz_copy, bool bf16, float* db, int rows, int cols,
                                          float* scratch, size_t scratch_floats);

// `a` is linear, relu, sigmoid, tanh or gelu (softmax is row-wise: the caller routes it).
cudaError_t activation_forward(cudaStream_t stream, Activation a, const float* x, float* y, size_t n);
cudaError_t activation_backward(cudaStream_t stream, Activation a, const float* x, const float* y, const float* dy,
                                float* dx, size_t n);
cudaError_t softmax_forward(cudaStream_t stream, const float* x, float* y, int rows, int cols);
cudaError_t softmax_backward(cudaStream_t stream, const float* y, const float* dy, float* dx, int rows, int cols);

// keep_scale = 1 / (1 - rate), computed once by the caller exactly as the CPU does.
cudaError_t dropout_forward(cudaStream_t stream, const float* x, float* y, float* mask_out, size_t n, float rate,
                            float keep_scale, uint64_t key, uint64_t first_index);
// The key read from device memory (low word, high word).
cudaError_t dropout_forward_keyed(cudaStream_t stream, const float* x, float* y, float* mask_out, size_t n,
                                  float rate, float keep_scale, const uint32_t* key_words, uint64_t first_index);
// *count += number of blocks that saw a NaN or Inf in x (finite_check.cu); the caller zeroes it.
cudaError_t count_nonfinite(cudaStream_t stream, const float* x, size_t n, int* count);

// The guard tally of Backend::check_finite in one launch: state (2 ints of
// device memory, zero before the first call) is left zero after each call
// (finite_check.cu); record_finite tallies a known verdict.
cudaError_t check_finite(cudaStream_t stream, const float* x, size_t n, int* state, int32_t* guard);
cudaError_t record_finite(cudaStream_t stream, int32_t* guard, bool finite);
// x[i] *= *factor (the factor in device memory); fp16's loss-scale update
// from guard[0] in one thread (math::loss_scale_update).
cudaError_t scale_by(cudaStream_t stream, float* x, size_t n, const float* factor);
cudaError_t loss_scale_update(cudaStream_t stream, math::LossScaleState* state, const int32_t* guard, bool sticky);
// dst[0, bytes) = host_src's bytes, carried as a kernel argument (upload.cu).
constexpr size_t kUploadBytes = 64;
cudaError_t upload(cudaStream_t stream, void* dst, const void* host_src, size_t bytes);

cudaError_t softmax_cross_entropy(cudaStream_t stream, const float* logits, const int32_t* labels, int rows,
                                  int cols, float grad_scale, float* grad, float* stats, float smoothing);
cudaError_t cross_entropy_probs(cudaStream_t stream, const float* probs, const int32_t* labels, int rows, int cols,
                                float grad_scale, float* grad, float* stats, float smoothing);
cudaError_t mean_squared_error(cudaStream_t stream, const float* y, const int32_t* labels, int rows, int cols,
                               float grad_scale, float* grad, float* stats);
cudaError_t regression_loss(cudaStream_t stream, const float* y, const float* targets, int rows, int cols,
                            math::RegressionLoss kind, float delta, math::RegressionMetric metric, float grad_scale,
                            float* grad, float* stats);

cudaError_t adam_step(cudaStream_t stream, float* params, const float* grads, float* m, float* v, size_t n,
                      const math::AdamParams& a);
cudaError_t sgd_step(cudaStream_t stream, float* params, const float* grads, float* velocity, size_t n,
                     const math::SgdParams& s);
// Scalars in device memory; nothing happens when skip is not null and *skip != 0.
cudaError_t adam_step_guarded(cudaStream_t stream, float* params, const float* grads, float* m, float* v, size_t n,
                              const math::AdamParams* a, const int32_t* skip);
cudaError_t sgd_step_guarded(cudaStream_t stream, float* params, const float* grads, float* velocity, size_t n,
                             const math::SgdParams* s, const int32_t* skip);

}  // namespace gputrain::cuda_kernels
