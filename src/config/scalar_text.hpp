// Scalar text <-> numbers and booleans, the strict way: the whole text must be
// the value ("12abc" is not 12), and non-finite numbers are not numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gputrain::config {

std::optional<int64_t> parse_int(const std::string& text);
std::optional<uint64_t> parse_uint(const std::string& text);
std::optional<double> parse_number(const std::string& text);  // finite only
// true/false (any case) and the YAML 1.1 words yes/no/on/off.
std::optional<bool> parse_bool(const std::string& text);

// The shortest text that parse_number reads back to exactly `value` ("0.001",
// "1e-07"); "0" for -0.0 as well.
std::string format_number(double value);

}  // namespace gputrain::config
