// How cuDNN, which pads both ends of an axis by the same amount, is made to
// compute a convolution whose padding differs at the two ends (Keras' 'same'
// puts the odd pixel at the bottom/right). Host arithmetic only, so that a
// unit test checks it without a GPU (tests/gpu/test_conv_padding.cpp).
#pragma once

#include <algorithm>

namespace gputrain::cuda_conv {

// One axis as cuDNN sees it: cuDNN pads both ends by `cudnn_pad` and has
// 1 + floor((extent + 2 * cudnn_pad - span) / stride) outputs; the input it
// reads is the real one with `before` zero rows in front and `after` behind
// (negative: that many trailing rows dropped, which no window reads). When
// before or after is not 0, the backend copies x into such a buffer.
struct AxisLayout {
    int cudnn_pad, before, after;
    int extent(int in) const { return before + in + after; }
    bool copies() const { return before != 0 || after != 0; }
};

// For an axis padded by pad_begin in front and pad_end behind (negative:
// trailing rows no window reads), with output windows every `stride` rows.
inline AxisLayout axis_layout(int pad_begin, int pad_end, int stride) {
    const int surplus = pad_begin - pad_end;
    // cuDNN's padding at the end may be up to stride - 1 rows more than the
    // geometry's: the floor division drops the window that would need them.
    if (surplus >= 0 && surplus < stride) return {pad_begin, 0, 0};
    if (surplus < 0) return {pad_begin, 0, -surplus};  // more padding behind: zero rows in the copy
    // Much more padding in front: cuDNN pads by the end's amount (at least 0)
    // and the copy carries the rest in front.
    const int pad = std::max(pad_end, 0);
    return {pad, pad_begin - pad, pad_end - pad};
}

}  // namespace gputrain::cuda_conv
