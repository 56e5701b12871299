// Shared by the image layers (conv2d, pooling): Keras' padding rules for one
// spatial axis, and the check that a layer's input is an NHWC image.
#pragma once

#include <string>

#include "core/shape.hpp"

namespace gputrain::nn {

class LayerArgs;

enum class Padding { same, valid };

// Output size and leading padding of one spatial axis.
struct WindowAxis {
    int64_t out = 0;
    int64_t pad_before = 0;
    int64_t extent = 0;  // the padded input the windows cover: (out - 1) * stride + span, at most kMaxSampleElements + 1
};

// Keras semantics. same: out = ceil(in / stride), total padding
// max((out - 1) * stride + dilation * (window - 1) + 1 - in, 0), the smaller
// half before (the odd pixel goes after). valid: no padding,
// out = (in - span) / stride + 1. Returns false when the window's span does not
// fit in the (padded) input. Arguments up to kMaxSampleElements; an extent
// beyond that is reported as kMaxSampleElements + 1 (see require_int_extent).
bool window_axis(int64_t in, int64_t window, int64_t stride, int64_t dilation, Padding padding, WindowAxis& out);

// Throws ConfigError when an axis's padded extent passes kMaxSampleElements
// (the backends index it with int), naming the layer and `window_text`.
void require_int_extent(const std::string& layer, const std::string& type, const std::string& window_text,
                        const WindowAxis& h, const WindowAxis& w);

const char* padding_name(Padding padding);

// Throws ConfigError unless `input` is (height, width, channels), with a hint
// for the common case of flat or 2-D image data:
// "layer 'conv2d' (conv2d): needs input (height, width, channels), got (784);
//  add a reshape layer with target_shape [28, 28, 1]"
void require_image_input(const std::string& layer, const std::string& type, const Shape& input);

// "" or, for an image input shaped like PyTorch's (channels, height, width)
// such as (1, 28, 28): "; gputrain's images are (height, width, channels): ..."
// with the shape to write, to append to an error about that input.
std::string channels_first_hint(const Shape& input);

// The layer key `padding`: same or valid (default valid).
Padding read_padding(LayerArgs& args);

}  // namespace gputrain::nn
