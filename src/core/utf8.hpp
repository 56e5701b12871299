// UTF-8: what is well formed, and text made so for formats that need it (JSON).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gputrain {

// Length of the well-formed UTF-8 sequence at text[pos], or 0 when it is not one
// (overlong forms, surrogates and code points past U+10FFFF are not well formed).
size_t utf8_sequence_length(std::string_view text, size_t pos);

void append_utf8(std::string& out, uint32_t code_point);

// `text` with each byte that is not part of a well-formed sequence read as
// Latin-1 (0xE9 becomes U+00E9, "é"): a path from a non-UTF-8 file system
// written into JSON, which must be Unicode.
std::string as_utf8(std::string_view text);

// Every byte of `bytes` as the code point of its value (all of them read as
// Latin-1), and back: text that is not UTF-8 kept whole in a format that must
// be. from_latin1_code_points is false when `text` holds another code point
// or is not UTF-8.
std::string to_latin1_code_points(std::string_view bytes);
bool from_latin1_code_points(std::string_view text, std::string& bytes);

}  // namespace gputrain
