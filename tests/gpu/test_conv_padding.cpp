// The CUDA backend's asymmetric-padding arithmetic (backend/cuda/conv_padding.hpp),
// which needs no GPU: for every small 1-D geometry, cuDNN's symmetric padding
// on the copied input must give the geometry's number of outputs and make
// every output read the same input rows (or zero padding) at every tap.
#include <catch2/catch.hpp>

#include <optional>
#include <vector>

#include "backend/cuda/conv_padding.hpp"

using gputrain::cuda_conv::axis_layout;
using gputrain::cuda_conv::AxisLayout;

namespace {

// The input row output `o` reads at tap `t`, or nothing for padding.
using Taps = std::vector<std::vector<std::optional<int>>>;

Taps geometry_taps(int in, int kernel, int dilation, int stride, int pad_begin, int out) {
    Taps taps(static_cast<size_t>(out));
    for (int o = 0; o < out; ++o)
        for (int t = 0; t < kernel; ++t) {
            const int row = o * stride - pad_begin + t * dilation;
            taps[static_cast<size_t>(o)].push_back(row >= 0 && row < in ? std::optional<int>(row) : std::nullopt);
        }
    return taps;
}

// What cuDNN reads: row o * stride - cudnn_pad + t * dilation of the copy,
// whose rows [before, before + in) are the input's (clipped to the extent).
Taps cudnn_taps(const AxisLayout& a, int in, int kernel, int dilation, int stride, int out) {
    const int extent = a.extent(in);
    Taps taps(static_cast<size_t>(out));
    for (int o = 0; o < out; ++o)
        for (int t = 0; t < kernel; ++t) {
            const int i = o * stride - a.cudnn_pad + t * dilation;
            const int row = i - a.before;
            const bool real = i >= 0 && i < extent && row >= 0 && row < in;
            taps[static_cast<size_t>(o)].push_back(real ? std::optional<int>(row) : std::nullopt);
        }
    return taps;
}

}  // namespace

TEST_CASE("cuDNN's symmetric padding on the copied input reads what the asymmetric geometry reads") {
    int geometries = 0, with_copy = 0, with_rows_in_front = 0, with_rows_dropped = 0;
    for (int in = 1; in <= 9; ++in)
        for (int kernel = 1; kernel <= 4; ++kernel)
            for (int dilation = 1; dilation <= 2; ++dilation)
                for (int stride = 1; stride <= 3; ++stride)
                    for (int pad_begin = 0; pad_begin <= 4; ++pad_begin)
                        for (int out = 1; out <= 10; ++out) {
                            const int span = dilation * (kernel - 1) + 1;
                            const int pad_end = (out - 1) * stride + span - in - pad_begin;
                            INFO("in " << in << " kernel " << kernel << " dilation " << dilation << " stride "
                                       << stride << " pad " << pad_begin << "/" << pad_end << " out " << out);
                            const AxisLayout a = axis_layout(pad_begin, pad_end, stride);
                            REQUIRE(a.cudnn_pad >= 0);
                            REQUIRE(a.before >= 0);
                            REQUIRE(a.extent(in) >= 1);
                            // cuDNN's output count (its floor division).
                            REQUIRE(1 + (a.extent(in) + 2 * a.cudnn_pad - span) / stride == out);
                            REQUIRE(cudnn_taps(a, in, kernel, dilation, stride, out) ==
                                    geometry_taps(in, kernel, dilation, stride, pad_begin, out));
                            ++geometries;
                            with_copy += a.copies() ? 1 : 0;
                            with_rows_in_front += a.before > 0 ? 1 : 0;
                            with_rows_dropped += a.after < 0 ? 1 : 0;
                        }
    // Every branch was exercised.
    REQUIRE(geometries == 9 * 4 * 2 * 3 * 5 * 10);
    REQUIRE(with_copy > 0);
    REQUIRE(with_rows_in_front > 0);
    REQUIRE(with_rows_dropped > 0);
    REQUIRE(with_copy < geometries);
}

TEST_CASE("Keras 'same' padding: no copy when symmetric, zero rows behind when the odd pixel is at the end") {
    // 3x3 stride 1: pad 1/1, cuDNN does it alone.
    const AxisLayout symmetric = axis_layout(1, 1, 1);
    CHECK(symmetric.cudnn_pad == 1);
    CHECK_FALSE(symmetric.copies());
    // 3x3 stride 2 on an even input: pad 0/1, one zero row behind.
    const AxisLayout odd = axis_layout(0, 1, 2);
    CHECK(odd.cudnn_pad == 0);
    CHECK(odd.before == 0);
    CHECK(odd.after == 1);
    // 'valid' with one unused trailing row at stride 2: cuDNN's floor drops it, no copy.
    CHECK_FALSE(axis_layout(0, -1, 2).copies());
    // Pad 2/0 at stride 1: cuDNN unpadded on a copy with two zero rows in front.
    const AxisLayout front = axis_layout(2, 0, 1);
    CHECK(front.cudnn_pad == 0);
    CHECK(front.before == 2);
    CHECK(front.after == 0);
}
