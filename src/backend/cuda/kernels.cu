// Element-wise kernels of the CUDA backend and the fused optimizer steps. The
// formulas come from backend/math.hpp, the same inline functions the CPU
// backend runs, so the two backends differ only in rounding of the hardware
// functions. Row-wise kernels (softmax, losses) are in row_kernels.cu, the
// activations and bias passes (plain and fused) in activation_kernels.cu.
#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/kernels.hpp"

namespace gputrain::cuda_kernels {

namespace {

__global__ void fill_kernel(float* x, size_t n, float value) {
    for (size_t i = thread_index(); i < n; i += thread_count()) x[i] = value;
}

__global__ void scale_kernel(float* x, size_t n, float alpha) {
    for (size_t i = thread_index(); i < n; i += thread_count()) x[i] *= alpha;
}

__global__ void scale_by_kernel(float* x, size_t n, const float* factor) {
    const float f = *factor;
    for (size_t i = thread_index(); i < n; i += thread_count()) x[i] *= f;
}

__global__ void loss_scale_update_kernel(math::LossScaleState* state, const int32_t* guard, bool sticky) {
    math::loss_scale_update(*state, guard[0] != 0, sticky);
}

__global__ void scale_matrix_kernel(float* c, size_t n, int cols, int ld, float beta) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        float& e = c[(i / cols) * ld + i % cols];
        e = beta == 0.0f ? 0.0f : e * beta;
    }
}

__device__ void dropout_rows(const float* x, float* y, float* mask_out, size_t n, float rate, float keep_scale,
                             uint64_t key, uint64_t first_index) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        // Same (key, first_index + i) as the CPU: masks do not depend on the backend.
        const float m = math::hash_uniform(key, first_index + i) >= rate ? keep_scale : 0.0f;
        mask_out[i] = m;
        y[i] = x[i] * m;
    }
}

__global__ void dropout_kernel(const float* x, float* y, float* mask_out, size_t n, float rate, float keep_scale,
                               uint64_t key, uint64_t first_index) {
    dropout_rows(x, y, mask_out, n, rate, keep_scale, key, first_index);
}

// The key from device memory, so that a recorded graph takes each step's key.
__global__ void dropout_keyed_kernel(const float* x, float* y, float* mask_out, size_t n, float rate,
                                     float keep_scale, const uint32_t* key_words, uint64_t first_index) {
    dropout_rows(x, y, mask_out, n, rate, keep_scale, math::join_key_words(key_words), first_index);
}

// The optimizer updates over a grid-stride loop, shared by the plain kernels
// (scalars as arguments) and the guarded ones (scalars in device memory).
__device__ __forceinline__ bool aligned_16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

__device__ void adam_rows(float* params, const float* grads, float* m, float* v, size_t n,
                          const math::AdamParams& a) {
    // Memory-bound: four elements per 16-byte load and store where all four
    // arrays allow it (the pool's allocations do), the same update on each.
    size_t scalar_begin = 0;
    if (aligned_16(params) && aligned_16(grads) && aligned_16(m) && aligned_16(v)) {
        float4* p4 = reinterpret_cast<float4*>(params);
        const float4* g4 = reinterpret_cast<const float4*>(grads);
        float4* m4 = reinterpret_cast<float4*>(m);
        float4* v4 = reinterpret_cast<float4*>(v);
        for (size_t i = thread_index(); i < n / 4; i += thread_count()) {
            float4 p = p4[i], mi = m4[i], vi = v4[i];
            const float4 g = g4[i];
            math::adam_update(p.x, g.x, mi.x, vi.x, a);
            math::adam_update(p.y, g.y, mi.y, vi.y, a);
            math::adam_update(p.z, g.z, mi.z, vi.z, a);
            math::adam_update(p.w, g.w, mi.w, vi.w, a);
            p4[i] = p;
            m4[i] = mi;
            v4[i] = vi;
        }
        scalar_begin = n / 4 * 4;
    }
    for (size_t i = scalar_begin + thread_index(); i < n; i += thread_count()) {
        float p = params[i], mi = m[i], vi = v[i];
        math::adam_update(p, grads[i], mi, vi, a);
        params[i] = p;
        m[i] = mi;
        v[i] = vi;
    }
}

__device__ void sgd_plain_rows(float* params, const float* grads, size_t n, float learning_rate) {
    for (size_t i = thread_index(); i < n; i += thread_count()) params[i] -= learning_rate * grads[i];
}

__device__ void sgd_momentum_rows(float* params, const float* grads, float* velocity, size_t n,
                                  const math::SgdParams& s) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        float p = params[i], vi = velocity[i];
        math::sgd_momentum_update(p, grads[i], vi, s);
        params[i] = p;
        velocity[i] = vi;
    }
}

__global__ void adam_kernel(float* params, const float* grads, float* m, float* v, size_t n,
                            math::AdamParams a) {
    adam_rows(params, grads, m, v, n, a);
}

__global__ void sgd_plain_kernel(float* params, const float* grads, size_t n, float learning_rate) {
    sgd_plain_rows(params, grads, n, learning_rate);
}

__global__ void sgd_momentum_kernel(float* params, const float* grads, float* velocity, size_t n,
                                    math::SgdParams s) {
    sgd_momentum_rows(params, grads, velocity, n, s);
}

// The guarded steps (Backend::adam_step_guarded): scalars read from device
// memory, the whole update skipped when *skip says the gradients were not finite.
__global__ void adam_guarded_kernel(float* params, const float* grads, float* m, float* v, size_t n,
                                    const math::AdamParams* scalars, const int32_t* skip) {
    if (skip && *skip != 0) return;
    // A local copy: through a reference the compiler would reload the scalars
    // from global memory after every store (they might alias the parameters).
    const math::AdamParams a = *scalars;
    adam_rows(params, grads, m, v, n, a);
}

__global__ void sgd_guarded_kernel(float* params, const float* grads, float* velocity, size_t n,
                                   const math::SgdParams* scalars, const int32_t* skip) {
    if (skip && *skip != 0) return;
    const math::SgdParams s = *scalars;
    if (s.momentum == 0.0f)  // no velocity buffer (it may be null)
        sgd_plain_rows(params, grads, n, s.learning_rate);
    else
        sgd_momentum_rows(params, grads, velocity, n, s);
}

}  // namespace

cudaError_t fill(cudaStream_t stream, float* x, size_t n, float value) {
    return launch_1d(stream, n, fill_kernel, x, n, value);
}

cudaError_t scale(cudaStream_t stream, float* x, size_t n, float alpha) {
    return launch_1d(stream, n, scale_kernel, x, n, alpha);
}

cudaError_t scale_by(cudaStream_t stream, float* x, size_t n, const float* factor) {
    return launch_1d(stream, n, scale_by_kernel, x, n, factor);
}

cudaError_t loss_scale_update(cudaStream_t stream, math::LossScaleState* state, const int32_t* guard, bool sticky) {
    loss_scale_update_kernel<<<1, 1, 0, stream>>>(state, guard, sticky);
    return cudaGetLastError();
}

cudaError_t scale_matrix(cudaStream_t stream, float* c, int rows, int cols, int ld, float beta) {
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    const size_t n = static_cast<size_t>(rows) * cols;
    return launch_1d(stream, n, scale_matrix_kernel, c, n, cols, ld, beta);
}

cudaError_t dropout_forward(cudaStream_t stream, const float* x, float* y, float* mask_out, size_t n, float rate,
                            float keep_scale, uint64_t key, uint64_t first_index) {
    return launch_1d(stream, n, dropout_kernel, x, y, mask_out, n, rate, keep_scale, key, first_index);
}

cudaError_t dropout_forward_keyed(cudaStream_t stream, const float* x, float* y, float* mask_out, size_t n,
                                  float rate, float keep_scale, const uint32_t* key_words, uint64_t first_index) {
    return launch_1d(stream, n, dropout_keyed_kernel, x, y, mask_out, n, rate, keep_scale, key_words, first_index);
}

cudaError_t adam_step(cudaStream_t stream, float* params, const float* grads, float* m, float* v, size_t n,
                      const math::AdamParams& a) {
    return launch_1d(stream, n, adam_kernel, params, grads, m, v, n, a);
}

cudaError_t sgd_step(cudaStream_t stream, float* params, const float* grads, float* velocity, size_t n,
                     const math::SgdParams& s) {
    // Without momentum there is no velocity buffer (it may be null).
    if (s.momentum == 0.0f) return launch_1d(stream, n, sgd_plain_kernel, params, grads, n, s.learning_rate);
    return launch_1d(stream, n, sgd_momentum_kernel, params, grads, velocity, n, s);
}

cudaError_t adam_step_guarded(cudaStream_t stream, float* params, const float* grads, float* m, float* v, size_t n,
                              const math::AdamParams* a, const int32_t* skip) {
    return launch_1d(stream, n, adam_guarded_kernel, params, grads, m, v, n, a, skip);
}

cudaError_t sgd_step_guarded(cudaStream_t stream, float* params, const float* grads, float* velocity, size_t n,
                             const math::SgdParams* s, const int32_t* skip) {
    return launch_1d(stream, n, sgd_guarded_kernel, params, grads, velocity, n, s, skip);
}

}  // namespace gputrain::cuda_kernels
