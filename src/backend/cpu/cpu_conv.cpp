// CpuBackend convolution: im2col + one OpenBLAS GEMM per cache-sized chunk of samples.
// NHWC input and [out_c, kh, kw, in_c] filters make each im2col row (one output
// pixel) the concatenation of kh*kw runs of in_c contiguous input floats, and
// each filter a row of the same K = kh*kw*in_c values, so:
//   forward          y[rows, out_c] = cols[rows, K] * w[out_c, K]^T
//   backward data    dcols = dy * w, then col2im adds dcols back into dx
//   backward filter  dw[out_c, K] = dy^T * cols (summed over chunks)
// A 1x1, stride-1, unpadded convolution is a plain GEMM on x (no im2col).
// Where the build has oneDNN and oneDNN has a fast kernel for the shape, it
// runs instead (onednn_conv.hpp) and needs no workspace.
#include "backend/cpu/cpu_backend.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/cpu/onednn_conv.hpp"
#include "core/error.hpp"

namespace gputrain {

namespace {

// im2col runs over chunks of samples whose columns fit in the L2 caches of the
// cores the GEMM runs on (at least one sample per chunk): the GEMM then reads
// columns im2col just wrote from cache. Measured with bench_conv, one BLAS
// thread, on the Fashion-MNIST CNN's second conv (M=6272, N=64, K=288, 7.2 MB
// of columns for batch 32): 3.5 ms forward in 1-4 sample chunks against 9.4 ms
// as one batch-wide GEMM. More BLAS threads get proportionally larger chunks
// so that each thread still has rows to work on (not measured: this machine
// has 2 busy cores).
constexpr size_t kWorkspaceBytesPerBlasThread = size_t{512} << 10;

size_t pixels_per_sample(const Conv2dGeometry& g) { return static_cast<size_t>(g.out_h) * g.out_w; }
size_t input_floats_per_sample(const Conv2dGeometry& g) { return static_cast<size_t>(g.in_h) * g.in_w * g.in_c; }
int patch_size(const Conv2dGeometry& g) { return g.kernel_h * g.kernel_w * g.in_c; }

bool is_pointwise(const Conv2dGeometry& g) {
    return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
           g.pad_left == 0 && g.out_h == g.in_h && g.out_w == g.in_w;
}

size_t cols_bytes_per_sample(const Conv2dGeometry& g) {
    return pixels_per_sample(g) * static_cast<size_t>(patch_size(g)) * sizeof(float);
}

// Samples per im2col chunk within the cache budget (at least one, at most the batch).
size_t budget_samples(const Conv2dGeometry& g) {
    const size_t budget = kWorkspaceBytesPerBlasThread * static_cast<size_t>(std::max(openblas_get_num_threads(), 1));
    return std::clamp<size_t>(budget / std::max<size_t>(cols_bytes_per_sample(g), 1), 1,
                              static_cast<size_t>(std::max(g.batch, 1)));
}

// How many samples one im2col pass covers: the cache budget, or fewer when the
// caller's workspace is smaller. A larger workspace (a model shares one, sized
// for its hungriest layer) does not make the chunks larger.
int samples_per_chunk(const Conv2dGeometry& g, size_t workspace_bytes) {
    const size_t per_sample = cols_bytes_per_sample(g);
    if (per_sample == 0) return std::max(g.batch, 1);
    const size_t fit = workspace_bytes / per_sample;
    if (fit == 0)
        throw Error("conv2d: workspace of " + std::to_string(workspace_bytes) + " bytes is smaller than one sample's " +
                    std::to_string(per_sample) + " (size it with conv2d_workspace_bytes)");
    return static_cast<int>(std::min(fit, budget_samples(g)));
}

// The outputs [first, last) along one axis whose tap lands inside the input:
// 0 <= o * stride + offset < size, with offset = tap * dilation - pad.
void outputs_inside(int offset, int stride, int outputs, int size, int& first, int& last) {
    first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    last = offset >= size ? 0 : std::min(outputs, (size - 1 - offset) / stride + 1);
    first = std::min(first, last);
}

// cols[(n * out_h + oh) * out_w + ow, (kh * kernel_w + kw) * in_c + c] = padded x.
// Filled one kernel tap at a time along an output row: the inner loop then
// runs over out_w pixels even when in_c is 1 (the first layer of an image
// network), instead of issuing one tiny copy per pixel and tap. One output
// row's im2col rows stay in L1 while its taps are written.
void im2col(const Conv2dGeometry& g, const float* x, int samples, float* cols) {
    const int channels = g.in_c, row_len = patch_size(g);
    for (int n = 0; n < samples; ++n) {
        const float* xs = x + static_cast<size_t>(n) * input_floats_per_sample(g);
        for (int oh = 0; oh < g.out_h; ++oh) {
            float* rows = cols + (static_cast<size_t>(n) * g.out_h + oh) * g.out_w * row_len;
            for (int kh = 0; kh < g.kernel_h; ++kh) {
                const int ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
                const bool row_inside = ih >= 0 && ih < g.in_h;
                const float* x_row = xs + static_cast<size_t>(row_inside ? ih : 0) * g.in_w * channels;
                for (int kw = 0; kw < g.kernel_w; ++kw) {
                    const int offset = kw * g.dilation_w - g.pad_left;
                    int first = 0, last = 0;
                    if (row_inside) outputs_inside(offset, g.stride_w, g.out_w, g.in_w, first, last);
                    float* dst = rows + (kh * g.kernel_w + kw) * channels;
                    for (int ow = 0; ow < first; ++ow)
                        std::fill_n(dst + static_cast<size_t>(ow) * row_len, channels, 0.0f);
                    if (channels == 1) {
                        for (int ow = first; ow < last; ++ow)
                            dst[static_cast<size_t>(ow) * row_len] = x_row[ow * g.stride_w + offset];
                    } else {
                        for (int ow = first; ow < last; ++ow)
                            std::memcpy(dst + static_cast<size_t>(ow) * row_len,
                                        x_row + static_cast<size_t>(ow * g.stride_w + offset) * channels,
                                        sizeof(float) * channels);
                    }
                    for (int ow = last; ow < g.out_w; ++ow)
                        std::fill_n(dst + static_cast<size_t>(ow) * row_len, channels, 0.0f);
                }
            }
        }
    }
}

// The adjoint of im2col: dx (already zeroed) += every column entry at its input position.
void col2im_add(const Conv2dGeometry& g, const float* cols, int samples, float* dx) {
    const int channels = g.in_c, row_len = patch_size(g);
    for (int n = 0; n < samples; ++n) {
        float* dxs = dx + static_cast<size_t>(n) * input_floats_per_sample(g);
        for (int oh = 0; oh < g.out_h; ++oh) {
            const float* rows = cols + (static_cast<size_t>(n) * g.out_h + oh) * g.out_w * row_len;
            for (int kh = 0; kh < g.kernel_h; ++kh) {
                const int ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
                if (ih < 0 || ih >= g.in_h) continue;
                float* dx_row = dxs + static_cast<size_t>(ih) * g.in_w * channels;
                for (int kw = 0; kw < g.kernel_w; ++kw) {
                    const int offset = kw * g.dilation_w - g.pad_left;
                    int first, last;
                    outputs_inside(offset, g.stride_w, g.out_w, g.in_w, first, last);
                    const float* src = rows + (kh * g.kernel_w + kw) * channels;
                    for (int ow = first; ow < last; ++ow) {
                        float* d = dx_row + static_cast<size_t>(ow * g.stride_w + offset) * channels;
                        const float* s = src + static_cast<size_t>(ow) * row_len;
                        for (int c = 0; c < channels; ++c) d[c] += s[c];
                    }
                }
            }
        }
    }
}

// For each chunk of samples whose columns fit the workspace: im2col of the
// chunk into `cols`, then fn(first sample, rows of cols).
template <typename Fn>
void for_each_im2col_chunk(const Conv2dGeometry& g, const float* x, float* cols, size_t workspace_bytes, Fn fn) {
    const int chunk = samples_per_chunk(g, workspace_bytes);
    for (int n0 = 0; n0 < g.batch; n0 += chunk) {
        const int samples = std::min(chunk, g.batch - n0);
        im2col(g, x + n0 * input_floats_per_sample(g), samples, cols);
        fn(n0, static_cast<int>(samples * pixels_per_sample(g)));
    }
}

}  // namespace

CpuConvPath cpu_conv_path_from_environment() {
    static const CpuConvPath path = [] {
        const char* v = std::getenv("GPUTRAIN_CPU_CONV");
        const std::string s = v ? v : "";
        if (s.empty() || s == "auto") return CpuConvPath::automatic;
        if (s == "onednn") return CpuConvPath::onednn;
        if (s == "im2col") return CpuConvPath::im2col;
        throw Error("environment variable GPUTRAIN_CPU_CONV='" + s + "': expected auto, onednn or im2col");
    }();
    return path;
}

OneDnnConvolutions& CpuBackend::onednn() {
    if (!onednn_) onednn_ = std::make_unique<OneDnnConvolutions>();
    return *onednn_;
}

bool CpuBackend::use_onednn(const Conv2dGeometry& g) {
    return conv_path_ != CpuConvPath::im2col && have_onednn() && onednn().use(g, conv_path_);
}

size_t CpuBackend::conv2d_workspace_bytes(const Conv2dGeometry& g) {
    if (g.batch > 0 && use_onednn(g)) return 0;
    return is_pointwise(g) ? 0 : budget_samples(g) * cols_bytes_per_sample(g);
}

void CpuBackend::conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w, float* y, void* workspace,
                                size_t workspace_bytes) {
    const int k = patch_size(g);
    if (g.batch == 0) return;
    if (use_onednn(g)) return onednn().forward(g, x, w, y);
    if (is_pointwise(g)) {
        gemm(false, true, g.batch * g.in_h * g.in_w, g.out_c, k, 1.0f, x, k, w, k, 0.0f, y, g.out_c);
        return;
    }
    float* cols = static_cast<float*>(workspace);
    for_each_im2col_chunk(g, x, cols, workspace_bytes, [&](int n0, int rows) {
        gemm(false, true, rows, g.out_c, k, 1.0f, cols, k, w, k, 0.0f, y + n0 * pixels_per_sample(g) * g.out_c,
             g.out_c);
    });
}

void CpuBackend::conv2d_backward_data(const Conv2dGeometry& g, const float* dy, const float* w, float* dx,
                                      void* workspace, size_t workspace_bytes) {
    const int k = patch_size(g);
    if (g.batch == 0) return;
    if (use_onednn(g)) return onednn().backward_data(g, dy, w, dx);
    if (is_pointwise(g)) {
        gemm(false, false, g.batch * g.in_h * g.in_w, k, g.out_c, 1.0f, dy, g.out_c, w, k, 0.0f, dx, k);
        return;
    }
    std::fill(dx, dx + g.batch * input_floats_per_sample(g), 0.0f);
    float* cols = static_cast<float*>(workspace);
    const int chunk = samples_per_chunk(g, workspace_bytes);
    const size_t pixels = pixels_per_sample(g);
    for (int n0 = 0; n0 < g.batch; n0 += chunk) {
        const int samples = std::min(chunk, g.batch - n0);
        const int rows = static_cast<int>(samples * pixels);
        gemm(false, false, rows, k, g.out_c, 1.0f, dy + n0 * pixels * g.out_c, g.out_c, w, k, 0.0f, cols, k);
        col2im_add(g, cols, samples, dx + n0 * input_floats_per_sample(g));
    }
}

void CpuBackend::conv2d_backward_filter(const Conv2dGeometry& g, const float* x, const float* dy, float* dw,
                                        void* workspace, size_t workspace_bytes) {
    const int k = patch_size(g);
    if (g.batch == 0) {
        std::fill(dw, dw + static_cast<size_t>(g.out_c) * k, 0.0f);
        return;
    }
    if (use_onednn(g)) return onednn().backward_filter(g, x, dy, dw);
    if (is_pointwise(g)) {
        gemm(true, false, g.out_c, k, g.batch * g.in_h * g.in_w, 1.0f, dy, g.out_c, x, k, 0.0f, dw, k);
        return;
    }
    float* cols = static_cast<float*>(workspace);
    for_each_im2col_chunk(g, x, cols, workspace_bytes, [&](int n0, int rows) {
        gemm(true, false, g.out_c, k, rows, 1.0f, dy + n0 * pixels_per_sample(g) * g.out_c, g.out_c, cols, k,
             n0 == 0 ? 0.0f : 1.0f, dw, k);
    });
}

}  // namespace gputrain
