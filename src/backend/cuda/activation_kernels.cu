// The activations and bias passes of the CUDA backend: activation_forward and
// activation_backward, add_bias and sum_rows, and the fused forms that end a
// dense or conv layer (Backend::bias_activation_forward,
// activation_bias_backward), which add the bias or sum its gradient in the
// same sweep. One kernel per activation kind (math::activate<A>,
// math::activation_grad<A>), shared by the plain and the fused forms, so the
// fused ones compute what the plain pairs compute, bit for bit: the product
// dy * a'(z) is rounded on its own (__fmul_rn: never contracted into the sum
// that follows), and the bias gradient is summed by the same column_sums
// chunking as sum_rows. The forms that also write a 16-bit copy for the next
// GEMM (bias_activation_forward_copy, activation_bias_backward_copy) are the
// same kernels with one more store.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/column_sums.cuh"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/kernels.hpp"

namespace gputrain::cuda_kernels {

namespace {

// A result stored as fp32, or rounded to nearest (even) into a 16-bit copy
// (Backend::gemm_copy's rounding) for the GEMM that reads it next.
__device__ __forceinline__ void store(float* p, float x) { *p = x; }
__device__ __forceinline__ void store(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }
__device__ __forceinline__ void store(__half* p, float x) { *p = __float2half_rn(x); }

__global__ void add_bias_kernel(float* y, const float* bias, size_t n, int cols) {
    for (size_t i = thread_index(); i < n; i += thread_count()) y[i] += bias[i % cols];
}

// y = a(in + bias), and z_out = in + bias, when there is a bias; plain
// activation_forward passes neither (y = a(in)). z_out == y (in place, a
// relu layer that keeps no z) writes y alone. y_copy, when not null, gets y
// rounded to 16 bits as well (bias_activation_forward_copy).
template <Activation A, class Copy = float>
__global__ void activation_kernel(const float* in, const float* bias, float* z_out, float* y, Copy* y_copy, size_t n,
                                  int cols) {
    const bool keep_z = z_out != y;
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        float v = in[i];
        if (bias) {
            v += bias[i % cols];
            if (keep_z) z_out[i] = v;
        }
        const float out = math::activate<A>(v);
        y[i] = out;
        if (y_copy) store(y_copy + i, out);
    }
}

// dz = dy * a'(z, y): activation_backward, and the fused backward of a layer
// without a bias; Out = 16 bits for activation_bias_backward_copy.
template <Activation A, class Out = float>
__global__ void activation_grad_kernel(const float* z, const float* y, const float* dy, Out* dz, size_t n) {
    for (size_t i = thread_index(); i < n; i += thread_count())
        store(dz + i, __fmul_rn(dy[i], math::activation_grad<A>(z[i], y[i])));
}

struct Column {  // sum_rows: the values themselves
    static constexpr int kCount = 1;
    using Sum = float;
    const float* x;
    __device__ void operator()(size_t i, int, float* v) const { v[0] = x[i]; }
};

// The gradient through the activation, written to dz (fp32, or its 16-bit
// copy) as its fp32 value is summed.
template <Activation A, class Out = float>
struct ActivationGrad {
    static constexpr int kCount = 1;
    using Sum = float;
    const float* z;
    const float* y;
    const float* dy;
    Out* dz;
    __device__ void operator()(size_t i, int, float* v) const {
        const float d = __fmul_rn(dy[i], math::activation_grad<A>(z[i], y[i]));
        store(dz + i, d);
        v[0] = d;
    }
};

template <class Copy>
cudaError_t bias_activation_forward_as(cudaStream_t stream, Activation a, float* z, const float* bias, float* y,
                                       Copy* y_copy, int rows, int cols) {
    const size_t n = elements(rows, cols);
    cudaError_t status = cudaErrorInvalidValue;
    with_elementwise_activation(a, [&](auto kind) {
        status = launch_1d(stream, n, activation_kernel<decltype(kind)::value, Copy>, z, bias, z, y, y_copy, n, cols);
    });
    return status;
}

template <class Out>
cudaError_t activation_bias_backward_as(cudaStream_t stream, Activation a, const float* z, const float* y,
                                        const float* dy, Out* dz, float* db, int rows, int cols, float* scratch,
                                        size_t scratch_floats) {
    cudaError_t status = cudaErrorInvalidValue;
    with_elementwise_activation(a, [&](auto kind) {
        constexpr Activation kind_value = decltype(kind)::value;
        if (db)
            status = column_sums(stream, ActivationGrad<kind_value, Out>{z, y, dy, dz}, rows, cols, db, scratch,
                                 scratch_floats);
        else
            status = launch_1d(stream, elements(rows, cols), activation_grad_kernel<kind_value, Out>, z, y, dy, dz,
                               elements(rows, cols));
    });
    return status;
}

}  // namespace

cudaError_t add_bias(cudaStream_t stream, float* y, const float* bias, int rows, int cols) {
    const size_t n = elements(rows, cols);
    return launch_1d(stream, n, add_bias_kernel, y, bias, n, cols);
}

cudaError_t sum_rows(cudaStream_t stream, const float* dy, float* db, int rows, int cols, float* scratch,
                     size_t scratch_floats) {
    // rows == 0 still writes db = 0, as the CPU does.
    return column_sums(stream, Column{dy}, rows, cols, db, scratch, scratch_floats);
}

cudaError_t activation_forward(cudaStream_t stream, Activation a, const float* x, float* y, size_t n) {
    if (a == Activation::linear) {
        if (n == 0 || x == y) return cudaSuccess;
        return cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, stream);
    }
    cudaError_t status = cudaErrorInvalidValue;
    with_elementwise_activation(a, [&](auto kind) {
        status = launch_1d(stream, n, activation_kernel<decltype(kind)::value>, x, nullptr, nullptr, y,
                           static_cast<float*>(nullptr), n, 1);
    });
    return status;
}

cudaError_t activation_backward(cudaStream_t stream, Activation a, const float* x, const float* y, const float* dy,
                                float* dx, size_t n) {
    if (a == Activation::linear) {
        if (n == 0 || dy == dx) return cudaSuccess;
        return cudaMemcpyAsync(dx, dy, n * sizeof(float), cudaMemcpyDeviceToDevice, stream);
    }
    cudaError_t status = cudaErrorInvalidValue;
    with_elementwise_activation(a, [&](auto kind) {
        status = launch_1d(stream, n, activation_grad_kernel<decltype(kind)::value>, x, y, dy, dx, n);
    });
    return status;
}

cudaError_t bias_activation_forward(cudaStream_t stream, Activation a, float* z, const float* bias, float* y,
                                    int rows, int cols) {
    return bias_activation_forward_as(stream, a, z, bias, y, static_cast<float*>(nullptr), rows, cols);
}

cudaError_t bias_activation_forward_copy(cudaStream_t stream, Activation a, float* z, const float* bias, float* y,
                                         void* y_copy, bool bf16, int rows, int cols) {
    if (bf16)
        return bias_activation_forward_as(stream, a, z, bias, y, static_cast<__nv_bfloat16*>(y_copy), rows, cols);
    return bias_activation_forward_as(stream, a, z, bias, y, static_cast<__half*>(y_copy), rows, cols);
}

cudaError_t activation_bias_backward(cudaStream_t stream, Activation a, const float* z, const float* y,
                                     const float* dy, float* dz, float* db, int rows, int cols, float* scratch,
                                     size_t scratch_floats) {
    return activation_bias_backward_as(stream, a, z, y, dy, dz, db, rows, cols, scratch, scratch_floats);
}

cudaError_t activation_bias_backward_copy(cudaStream_t stream, Activation a, const float* z, const float* y,
                                          const float* dy, void* dz_copy, bool bf16, float* db, int rows, int cols,
                                          float* scratch, size_t scratch_floats) {
    if (bf16)
        return activation_bias_backward_as(stream, a, z, y, dy, static_cast<__nv_bfloat16*>(dz_copy), db, rows, cols,
                                           scratch, scratch_floats);
    return activation_bias_backward_as(stream, a, z, y, dy, static_cast<__half*>(dz_copy), db, rows, cols, scratch,
                                       scratch_floats);
}

}  // namespace gputrain::cuda_kernels
