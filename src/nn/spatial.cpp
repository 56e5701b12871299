#include "nn/spatial.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "nn/layer_args.hpp"

namespace gputrain::nn {

bool window_axis(int64_t in, int64_t window, int64_t stride, int64_t dilation, Padding padding, WindowAxis& out) {
    // In 128 bits: dilation, window and stride may each be near 2^31.
    const __int128 span = static_cast<__int128>(dilation) * (window - 1) + 1;
    const auto extent_of = [&](int64_t outputs) {
        const __int128 e = static_cast<__int128>(outputs - 1) * stride + span;
        return static_cast<int64_t>(std::min<__int128>(e, kMaxSampleElements + 1));
    };
    if (padding == Padding::valid) {
        if (span > in) return false;
        out.out = static_cast<int64_t>((in - span) / stride + 1);
        out.pad_before = 0;
        out.extent = extent_of(out.out);
        return true;
    }
    out.out = (in + stride - 1) / stride;
    out.extent = extent_of(out.out);
    out.pad_before = std::max<int64_t>(out.extent - in, 0) / 2;
    return true;
}

void require_int_extent(const std::string& layer, const std::string& type, const std::string& window_text,
                        const WindowAxis& h, const WindowAxis& w) {
    if (h.extent <= kMaxSampleElements && w.extent <= kMaxSampleElements) return;
    throw ConfigError("layer '" + layer + "' (" + type + "): " + window_text +
                      ": its padded input would be larger than " + std::to_string(kMaxSampleElements) +
                      " pixels along an axis; use smaller sizes");
}

const char* padding_name(Padding padding) { return padding == Padding::same ? "same" : "valid"; }

void require_image_input(const std::string& layer, const std::string& type, const Shape& input) {
    if (input.size() == 3) return;
    std::string hint = "add a reshape layer with target_shape [height, width, channels] before it";
    if (input.size() == 2) {
        hint = "add a reshape layer with target_shape [" + std::to_string(input[0]) + ", " + std::to_string(input[1]) +
               ", 1], or give model.input_shape [" + std::to_string(input[0]) + ", " + std::to_string(input[1]) +
               ", 1]";
    } else if (input.size() == 1) {
        const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(input[0]))));
        if (side * side == input[0])
            hint = "add a reshape layer with target_shape [" + std::to_string(side) + ", " + std::to_string(side) +
                   ", 1]";
    }
    throw ConfigError("layer '" + layer + "' (" + type + "): needs input (height, width, channels), got " +
                      shape_to_string(input, false) + "; " + hint);
}

std::string channels_first_hint(const Shape& in) {
    if (in.size() != 3 || !(in[0] == 1 || in[0] == 3 || in[0] == 4) || in[1] < 8 || in[2] < 8) return "";
    return "; gputrain's images are (height, width, channels), not PyTorch's (channels, height, width): for " +
           std::to_string(in[0]) + "-channel images write input_shape: [" + std::to_string(in[1]) + ", " +
           std::to_string(in[2]) + ", " + std::to_string(in[0]) + "]";
}

Padding read_padding(LayerArgs& args) {
    return args.choice("padding", "valid", {"same", "valid"}) == "same" ? Padding::same : Padding::valid;
}

}  // namespace gputrain::nn
