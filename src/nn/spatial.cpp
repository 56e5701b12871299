#include "nn/spatial.hpp"

#include <cmath>

#include "core/error.hpp"

namespace gputrain::nn {

bool window_axis(int64_t in, int64_t window, int64_t stride, int64_t dilation, Padding padding, WindowAxis& out) {
    const int64_t span = dilation * (window - 1) + 1;
    if (padding == Padding::valid) {
        if (span > in) return false;
        out.out = (in - span) / stride + 1;
        out.pad_before = 0;
        return true;
    }
    out.out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>((out.out - 1) * stride + span - in, 0);
    out.pad_before = total / 2;
    return true;
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

}  // namespace gputrain::nn
