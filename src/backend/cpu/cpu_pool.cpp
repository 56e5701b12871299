// CpuBackend 2-D pooling over NHWC. Windows only look at input pixels: padding
// never wins a max and never counts toward an average (Keras' 'same' pooling).
// Max pooling's backward pass routes each dy to the FIRST maximum in the
// window's row-major scan, the rule every backend shares (see backend.hpp).
#include "backend/cpu/cpu_backend.hpp"

#include <algorithm>

namespace gputrain {

namespace {

constexpr int kChannelBlock = 256;

// Where pixel `in` is strictly greater than the running maximum, it becomes the
// maximum and `offset` its position. Branch-free, so that it vectorizes
// (random data would mispredict half the branches).
void take_greater(const float* __restrict in, int offset, int width, float* __restrict best,
                  int* __restrict best_offset) {
    for (int c = 0; c < width; ++c) {
        const int take = -static_cast<int>(in[c] > best[c]);  // all ones or zero
        best[c] = take ? in[c] : best[c];
        best_offset[c] = (offset & take) | (best_offset[c] & ~take);
    }
}

// The window of output pixel (oh, ow), clipped to the input.
struct Window {
    int h0, h1, w0, w1;  // [h0, h1) x [w0, w1)
    int pixels() const { return std::max(h1 - h0, 0) * std::max(w1 - w0, 0); }
};

Window window_at(const Pool2dGeometry& g, int oh, int ow) {
    const int top = oh * g.stride_h - g.pad_top, left = ow * g.stride_w - g.pad_left;
    return {std::max(top, 0), std::min(top + g.pool_h, g.in_h), std::max(left, 0), std::min(left + g.pool_w, g.in_w)};
}

size_t pixel_index(const Pool2dGeometry& g, int n, int h, int w) {
    return ((static_cast<size_t>(n) * g.in_h + h) * g.in_w + w) * g.channels;
}

}  // namespace

void CpuBackend::pool2d_forward(const Pool2dGeometry& g, const float* x, float* y) {
    const int channels = g.channels;
    for (int n = 0; n < g.batch; ++n) {
        for (int oh = 0; oh < g.out_h; ++oh) {
            for (int ow = 0; ow < g.out_w; ++ow) {
                float* out = y + ((static_cast<size_t>(n) * g.out_h + oh) * g.out_w + ow) * channels;
                const Window win = window_at(g, oh, ow);
                const int count = win.pixels();
                if (count == 0) {  // a window entirely in the padding sees no input
                    std::fill(out, out + channels, 0.0f);
                    continue;
                }
                std::copy_n(x + pixel_index(g, n, win.h0, win.w0), channels, out);
                for (int h = win.h0; h < win.h1; ++h) {
                    for (int w = win.w0; w < win.w1; ++w) {
                        if (h == win.h0 && w == win.w0) continue;
                        const float* in = x + pixel_index(g, n, h, w);
                        if (g.mode == PoolMode::max) {
                            for (int c = 0; c < channels; ++c) out[c] = in[c] > out[c] ? in[c] : out[c];
                        } else {
                            for (int c = 0; c < channels; ++c) out[c] += in[c];
                        }
                    }
                }
                if (g.mode == PoolMode::average) {
                    const float inv = 1.0f / static_cast<float>(count);
                    for (int c = 0; c < channels; ++c) out[c] *= inv;
                }
            }
        }
    }
}

void CpuBackend::pool2d_backward(const Pool2dGeometry& g, const float* x, const float* /*y*/, const float* dy,
                                 float* dx) {
    const int channels = g.channels;
    std::fill(dx, dx + static_cast<size_t>(g.batch) * g.in_h * g.in_w * channels, 0.0f);
    for (int n = 0; n < g.batch; ++n) {
        for (int oh = 0; oh < g.out_h; ++oh) {
            for (int ow = 0; ow < g.out_w; ++ow) {
                const float* grad = dy + ((static_cast<size_t>(n) * g.out_h + oh) * g.out_w + ow) * channels;
                const Window win = window_at(g, oh, ow);
                const int count = win.pixels();
                if (count == 0) continue;
                if (g.mode == PoolMode::average) {
                    const float inv = 1.0f / static_cast<float>(count);
                    for (int h = win.h0; h < win.h1; ++h)
                        for (int w = win.w0; w < win.w1; ++w) {
                            float* d = dx + pixel_index(g, n, h, w);
                            for (int c = 0; c < channels; ++c) d[c] += grad[c] * inv;
                        }
                    continue;
                }
                // Re-scan x rather than compare against y: a strict '>' keeps the
                // first maximum. Channels are innermost, a block at a time on the stack.
                const size_t corner = pixel_index(g, n, win.h0, win.w0);
                for (int c0 = 0; c0 < channels; c0 += kChannelBlock) {
                    const int width = std::min(kChannelBlock, channels - c0);
                    float best[kChannelBlock];
                    int best_offset[kChannelBlock];  // of the maximum's pixel from the window's corner
                    for (int c = 0; c < width; ++c) best[c] = x[corner + c0 + c], best_offset[c] = 0;
                    for (int h = win.h0; h < win.h1; ++h)
                        for (int w = win.w0; w < win.w1; ++w) {
                            const int offset = static_cast<int>(pixel_index(g, n, h, w) - corner);
                            take_greater(x + corner + offset + c0, offset, width, best, best_offset);
                        }
                    float* d = dx + corner + c0;
                    for (int c = 0; c < width; ++c) d[best_offset[c] + c] += grad[c0 + c];
                }
            }
        }
    }
}

}  // namespace gputrain
