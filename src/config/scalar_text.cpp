#include "config/scalar_text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace gputrain::config {

namespace {

// from_chars rejects a leading '+', which YAML allows.
const char* skip_plus(const std::string& text) {
    return text.size() > 1 && text[0] == '+' && text[1] != '-' ? text.data() + 1 : text.data();
}

template <typename T>
std::optional<T> parse_whole(const std::string& text) {
    if (text.empty()) return std::nullopt;
    const char* first = skip_plus(text);
    const char* last = text.data() + text.size();
    T value{};
    const auto [end, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || end != last) return std::nullopt;
    return value;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

}  // namespace

std::optional<int64_t> parse_int(const std::string& text) { return parse_whole<int64_t>(text); }

std::optional<uint64_t> parse_uint(const std::string& text) {
    if (!text.empty() && text[0] == '-') return std::nullopt;
    return parse_whole<uint64_t>(text);
}

std::optional<double> parse_number(const std::string& text) {
    const auto value = parse_whole<double>(text);
    if (!value || !std::isfinite(*value)) return std::nullopt;
    return value;
}

std::optional<bool> parse_bool(const std::string& text) {
    const std::string t = lower(text);
    if (t == "true" || t == "yes" || t == "on") return true;
    if (t == "false" || t == "no" || t == "off") return false;
    return std::nullopt;
}

std::string format_number(double value) {
    if (value == 0.0) return "0";  // -0.0 too: one spelling of one value
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

}  // namespace gputrain::config
