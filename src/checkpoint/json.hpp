// The small subset of JSON that safetensors headers use: objects, arrays, strings
// (all escapes, \uXXXX with surrogate pairs) and integers. true/false/null and
// fractional numbers never occur in a safetensors header, so they are rejected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gputrain::checkpoint::json {

struct Member;

struct Value {
    enum class Kind { String, Integer, Array, Object };

    Kind kind = Kind::Integer;
    size_t offset = 0;   // byte in the parsed text where the value starts
    std::string string;
    int64_t integer = 0;
    std::vector<Value> array;
    // A named struct, not std::pair: a pair of an incomplete Value is rejected by
    // clang (the fuzz build), a vector of an incomplete type is not.
    std::vector<Member> object;   // in document order, keys unique

    const Value* find(std::string_view key) const;
};

struct Member {
    std::string key;
    Value value;
};

// "a string", "an integer", ... for messages.
const char* kind_name(Value::Kind kind);

// Malformed input: `byte` is where in the text the problem was found.
class ParseError : public std::runtime_error {
public:
    ParseError(size_t byte, const std::string& problem)
        : std::runtime_error(problem), byte(byte) {}
    size_t byte;
};

// Parses one value; whitespace may surround it, anything else after it is an error.
// Strings must be valid UTF-8; duplicate object keys are an error.
Value parse(std::string_view text);

// `text` as a JSON string literal, quotes included. Non-ASCII UTF-8 is kept as is;
// quotes, backslashes and control characters are escaped.
std::string quote(std::string_view text);

bool is_valid_utf8(std::string_view text);

}  // namespace gputrain::checkpoint::json
