#include "core/utf8.hpp"

namespace gputrain {

// Length of the well-formed UTF-8 sequence at text[pos], or 0 when it is not one
// (overlong forms, surrogates and code points past U+10FFFF are not well formed).
size_t utf8_sequence_length(std::string_view text, size_t pos) {
    const auto byte_at = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte_at(pos);
    if (lead < 0x80) return 1;
    size_t length = 0;
    uint32_t code_point = 0, smallest = 0;
    if ((lead & 0xE0) == 0xC0) {
        length = 2, code_point = lead & 0x1F, smallest = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3, code_point = lead & 0x0F, smallest = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4, code_point = lead & 0x07, smallest = 0x10000;
    } else {
        return 0;
    }
    if (pos + length > text.size()) return 0;
    for (size_t i = 1; i < length; ++i) {
        const unsigned char next = byte_at(pos + i);
        if ((next & 0xC0) != 0x80) return 0;
        code_point = (code_point << 6) | (next & 0x3F);
    }
    if (code_point < smallest || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF))
        return 0;
    return length;
}

void append_utf8(std::string& out, uint32_t code_point) {
    if (code_point < 0x80) {
        out += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
        out += static_cast<char>(0xC0 | (code_point >> 6));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else if (code_point < 0x10000) {
        out += static_cast<char>(0xE0 | (code_point >> 12));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code_point >> 18));
        out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    }
}

std::string as_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        const size_t length = utf8_sequence_length(text, pos);
        if (length == 0) {
            append_utf8(out, static_cast<unsigned char>(text[pos]));
            ++pos;
        } else {
            out.append(text.substr(pos, length));
            pos += length;
        }
    }
    return out;
}

std::string to_latin1_code_points(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) append_utf8(out, static_cast<unsigned char>(c));
    return out;
}

bool from_latin1_code_points(std::string_view text, std::string& bytes) {
    bytes.clear();
    for (size_t pos = 0; pos < text.size();) {
        const auto lead = static_cast<unsigned char>(text[pos]);
        const size_t length = utf8_sequence_length(text, pos);
        if (length == 1) {
            bytes += static_cast<char>(lead);
        } else if (length == 2 && lead <= 0xC3) {  // U+0080..U+00FF
            bytes += static_cast<char>(((lead & 0x1F) << 6) | (static_cast<unsigned char>(text[pos + 1]) & 0x3F));
        } else {
            return false;
        }
        pos += length;
    }
    return true;
}

}  // namespace gputrain
