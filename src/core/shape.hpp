// Shape: the dimensions of a tensor, batch dimension excluded unless stated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gputrain {

using Shape = std::vector<int64_t>;

inline int64_t shape_elements(const Shape& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
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
