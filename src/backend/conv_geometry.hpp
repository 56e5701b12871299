// Geometry of a 2-D convolution or pooling over NHWC tensors (channels last,
// the layout of the whole tool; see docs/architecture.md "Image layout").
// A geometry describes one call: `batch` is the number of samples in it.
// Padding may be asymmetric (Keras' 'same' puts the odd pixel at the bottom and
// right): pad_top/pad_left are given, the bottom/right padding is whatever
// makes the stated output size come out.
#pragma once

namespace gputrain {

struct Conv2dGeometry {
    int batch = 0;
    int in_h = 0, in_w = 0, in_c = 0;
    int out_h = 0, out_w = 0, out_c = 0;
    int kernel_h = 1, kernel_w = 1;
    int stride_h = 1, stride_w = 1;
    int dilation_h = 1, dilation_w = 1;
    int pad_top = 0, pad_left = 0;

    // Padding after the input so that the last window ends inside the padded input.
    int pad_bottom() const { return (out_h - 1) * stride_h + dilation_h * (kernel_h - 1) + 1 - in_h - pad_top; }
    int pad_right() const { return (out_w - 1) * stride_w + dilation_w * (kernel_w - 1) + 1 - in_w - pad_left; }
};

enum class PoolMode { max, average };  // average counts only the input pixels in the window (Keras)

struct Pool2dGeometry {
    PoolMode mode = PoolMode::max;
    int batch = 0;
    int in_h = 0, in_w = 0, channels = 0;
    int out_h = 0, out_w = 0;
    int pool_h = 1, pool_w = 1;
    int stride_h = 1, stride_w = 1;
    int pad_top = 0, pad_left = 0;

    int pad_bottom() const { return (out_h - 1) * stride_h + pool_h - in_h - pad_top; }
    int pad_right() const { return (out_w - 1) * stride_w + pool_w - in_w - pad_left; }
};

}  // namespace gputrain
