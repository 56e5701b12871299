// Shape: the dimensions of a tensor, batch dimension excluded unless stated.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gputrain {

using Shape = std::vector<int64_t>;

inline int64_t shape_elements(const Shape& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// The most elements one sample may have at any layer, and the largest
// extent of one axis: the backends index a sample's elements, and an image
// axis with its padding, with int.
constexpr int64_t kMaxSampleElements = std::numeric_limits<int32_t>::max();

// shape_elements without overflow: false (and `out` untouched) when the
// product of the dimensions passes `limit`; every dimension must be >= 0.
inline bool elements_within(const Shape& shape, int64_t limit, int64_t& out) {
    int64_t n = 1;
    for (int64_t d : shape) {
        if (d < 0) return false;
        if (d != 0 && n > limit / d) return false;
        n *= d;
    }
    if (n > limit) return false;
    out = n;
    return true;
}

// "(None, 28, 28)" style, as Keras prints output shapes; with_batch=false gives "(28, 28)".
inline std::string shape_to_string(const Shape& shape, bool with_batch = true) {
    std::string s = with_batch ? "(None" : "(";
    bool first = !with_batch;
    for (int64_t d : shape) {
        if (!first) s += ", ";
        s += std::to_string(d);
        first = false;
    }
    return s + ")";
}

}  // namespace gputrain
