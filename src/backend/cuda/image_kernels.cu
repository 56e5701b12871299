// NHWC image kernels of the CUDA backend: pooling and the shifted zero-filled copy.
//
// Pooling is our own code, not cuDNN's: cuDNN pads symmetrically (Keras'
// 'same' puts the odd pixel at the bottom/right) and does not document which
// of several equal maxima its backward pass picks. These kernels follow
// CpuBackend (cpu_pool.cpp) operation for operation, so both backends agree
// bit for bit: windows are clipped to the input, a max starts from the
// window's first pixel and takes a later one only when strictly greater, an
// average sums in row-major order and multiplies by 1/pixels, and the
// backward pass adds each output's share to an input pixel in ascending
// output order (the CPU's scatter order), here as a gather (no atomics).
#include "backend/cuda/image_kernels.hpp"
#include "backend/cuda/kernel_launch.cuh"

namespace gputrain::cuda_kernels {

namespace {

__global__ void copy_shifted_kernel(const float* src, int src_h, int src_w, float* dst, int dst_h, int dst_w,
                                    int top, int left, int channels, size_t n) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        const int c = static_cast<int>(i % channels);
        size_t rest = i / channels;
        const int w = static_cast<int>(rest % dst_w);
        rest /= dst_w;
        const int h = static_cast<int>(rest % dst_h);
        const size_t sample = rest / dst_h;
        const int sh = h - top, sw = w - left;
        dst[i] = (sh >= 0 && sh < src_h && sw >= 0 && sw < src_w)
                     ? src[((sample * src_h + sh) * src_w + sw) * channels + c]
                     : 0.0f;
    }
}

// Window of output pixel (oh, ow) clipped to the input: [h0, h1) x [w0, w1).
struct Window {
    int h0, h1, w0, w1;
};

__device__ __forceinline__ Window window_at(const Pool2dGeometry& g, int oh, int ow) {
    const int top = oh * g.stride_h - g.pad_top, left = ow * g.stride_w - g.pad_left;
    return {max(top, 0), min(top + g.pool_h, g.in_h), max(left, 0), min(left + g.pool_w, g.in_w)};
}

__device__ __forceinline__ int window_pixels(const Window& win) {
    return max(win.h1 - win.h0, 0) * max(win.w1 - win.w0, 0);
}

// Row-major position (h, w) of the first maximum of channel c in the window
// (which has at least one pixel); `sample` points at x[n, 0, 0, 0].
__device__ __forceinline__ void first_max(const Pool2dGeometry& g, const float* sample, int c, const Window& win,
                                          int& best_h, int& best_w) {
    best_h = win.h0;
    best_w = win.w0;
    float best = sample[(static_cast<size_t>(win.h0) * g.in_w + win.w0) * g.channels + c];
    for (int h = win.h0; h < win.h1; ++h)
        for (int w = win.w0; w < win.w1; ++w) {
            const float v = sample[(static_cast<size_t>(h) * g.in_w + w) * g.channels + c];
            if (v > best) {
                best = v;
                best_h = h;
                best_w = w;
            }
        }
}

// One thread per output element (n, oh, ow, c): neighbouring threads read
// neighbouring channels.
__global__ void pool_forward_kernel(Pool2dGeometry g, const float* x, float* y, size_t n) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        const int c = static_cast<int>(i % g.channels);
        size_t rest = i / g.channels;
        const int ow = static_cast<int>(rest % g.out_w);
        rest /= g.out_w;
        const int oh = static_cast<int>(rest % g.out_h);
        const size_t sample_index = rest / g.out_h;
        const float* sample = x + sample_index * g.in_h * g.in_w * g.channels;
        const Window win = window_at(g, oh, ow);
        const int pixels = window_pixels(win);
        if (pixels == 0) {  // a window entirely in the padding sees no input
            y[i] = 0.0f;
            continue;
        }
        float out = sample[(static_cast<size_t>(win.h0) * g.in_w + win.w0) * g.channels + c];
        for (int h = win.h0; h < win.h1; ++h)
            for (int w = win.w0; w < win.w1; ++w) {
                if (h == win.h0 && w == win.w0) continue;
                const float v = sample[(static_cast<size_t>(h) * g.in_w + w) * g.channels + c];
                if (g.mode == PoolMode::max)
                    out = v > out ? v : out;
                else
                    out += v;
            }
        if (g.mode == PoolMode::average) out = __fmul_rn(out, 1.0f / static_cast<float>(pixels));
        y[i] = out;
    }
}

// The output rows (or columns) whose windows contain input row `in`:
// o * stride - pad <= in < o * stride - pad + pool, within [0, out).
__device__ __forceinline__ void covering_outputs(int in, int stride, int pad, int pool, int out, int& first,
                                                 int& last) {
    const int lowest = in + pad - pool + 1;  // o * stride >= lowest
    first = lowest <= 0 ? 0 : (lowest + stride - 1) / stride;
    last = min((in + pad) / stride, out - 1);  // inclusive
}

// One thread per input element (n, h, w, c): the sum of the shares of every
// window that holds it, in ascending (oh, ow) order.
__global__ void pool_backward_kernel(Pool2dGeometry g, const float* x, const float* dy, float* dx, size_t n) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        const int c = static_cast<int>(i % g.channels);
        size_t rest = i / g.channels;
        const int w = static_cast<int>(rest % g.in_w);
        rest /= g.in_w;
        const int h = static_cast<int>(rest % g.in_h);
        const size_t sample_index = rest / g.in_h;
        const float* sample = x + sample_index * g.in_h * g.in_w * g.channels;
        const float* dy_sample = dy + sample_index * g.out_h * g.out_w * g.channels;
        int oh_first, oh_last, ow_first, ow_last;
        covering_outputs(h, g.stride_h, g.pad_top, g.pool_h, g.out_h, oh_first, oh_last);
        covering_outputs(w, g.stride_w, g.pad_left, g.pool_w, g.out_w, ow_first, ow_last);
        float sum = 0.0f;
        for (int oh = oh_first; oh <= oh_last; ++oh)
            for (int ow = ow_first; ow <= ow_last; ++ow) {
                const float grad = dy_sample[(static_cast<size_t>(oh) * g.out_w + ow) * g.channels + c];
                const Window win = window_at(g, oh, ow);
                if (g.mode == PoolMode::average) {
                    // __fmul_rn: no fused multiply-add, the CPU rounds the product first.
                    sum += __fmul_rn(grad, 1.0f / static_cast<float>(window_pixels(win)));
                } else {
                    int best_h, best_w;
                    first_max(g, sample, c, win, best_h, best_w);
                    if (best_h == h && best_w == w) sum += grad;
                }
            }
        dx[i] = sum;
    }
}

__global__ void conv_columns_kernel(Conv2dGeometry g, const float* x, float* columns, int k_size, size_t n) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        const int k = static_cast<int>(i % k_size);
        const size_t m = i / k_size;
        const int c = k % g.in_c;
        const int s = (k / g.in_c) % g.kernel_w;
        const int r = k / (g.in_c * g.kernel_w);
        const int ow = static_cast<int>(m % g.out_w);
        const int oh = static_cast<int>((m / g.out_w) % g.out_h);
        const size_t sample = m / (static_cast<size_t>(g.out_w) * g.out_h);
        const int ih = oh * g.stride_h - g.pad_top + r * g.dilation_h;
        const int iw = ow * g.stride_w - g.pad_left + s * g.dilation_w;
        columns[i] = (ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w)
                         ? x[((sample * g.in_h + ih) * g.in_w + iw) * g.in_c + c]
                         : 0.0f;
    }
}

}  // namespace

cudaError_t conv_columns(cudaStream_t stream, const Conv2dGeometry& g, const float* x, float* columns) {
    const int k_size = g.kernel_h * g.kernel_w * g.in_c;
    const size_t n = elements(g.batch, g.out_h, g.out_w, k_size);
    if (n == 0) return cudaSuccess;
    conv_columns_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(g, x, columns, k_size, n);
    return cudaGetLastError();
}

cudaError_t copy_shifted_nhwc(cudaStream_t stream, const float* src, int src_h, int src_w, float* dst, int dst_h,
                              int dst_w, int top, int left, int batch, int channels) {
    const size_t n = elements(batch, dst_h, dst_w, channels);
    if (n == 0) return cudaSuccess;
    copy_shifted_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(src, src_h, src_w, dst, dst_h, dst_w, top, left,
                                                                     channels, n);
    return cudaGetLastError();
}

cudaError_t pool2d_forward(cudaStream_t stream, const Pool2dGeometry& g, const float* x, float* y) {
    const size_t n = elements(g.batch, g.out_h, g.out_w, g.channels);
    if (n == 0) return cudaSuccess;
    pool_forward_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(g, x, y, n);
    return cudaGetLastError();
}

cudaError_t pool2d_backward(cudaStream_t stream, const Pool2dGeometry& g, const float* x, const float* dy,
                            float* dx) {
    const size_t n = elements(g.batch, g.in_h, g.in_w, g.channels);
    if (n == 0) return cudaSuccess;
    pool_backward_kernel<<<blocks_for(n), kBlockThreads, 0, stream>>>(g, x, dy, dx, n);
    return cudaGetLastError();
}

}  // namespace gputrain::cuda_kernels
