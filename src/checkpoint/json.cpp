#include "checkpoint/json.hpp"

#include <cstdio>
#include <limits>
#include <unordered_set>

#include "core/utf8.hpp"

namespace gputrain::checkpoint::json {
namespace {

// Deeper nesting never occurs in a safetensors header; the limit keeps a hostile
// file from exhausting the stack of this recursive parser.
constexpr int kMaxDepth = 64;


class Parser {
public:
    explicit Parser(std::string_view text) : text_(text) {}

    Value parse_document() {
        skip_whitespace();
        Value value = parse_value(0);
        skip_whitespace();
        if (pos_ != text_.size()) fail(pos_, "unexpected " + describe(pos_) + " after the JSON value");
        return value;
    }

private:
    [[noreturn]] void fail(size_t byte, const std::string& problem) const { throw ParseError(byte, problem); }

    std::string describe(size_t pos) const {
        if (pos >= text_.size()) return "end of text";
        const unsigned char c = static_cast<unsigned char>(text_[pos]);
        char buffer[16];
        if (c >= 0x20 && c < 0x7F)
            std::snprintf(buffer, sizeof buffer, "'%c'", c);
        else
            std::snprintf(buffer, sizeof buffer, "byte 0x%02X", c);
        return buffer;
    }

    bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

    void expect(char c, const char* context) {
        if (!at(c)) fail(pos_, std::string("expected '") + c + "' " + context + ", found " + describe(pos_));
        ++pos_;
    }

    void skip_whitespace() {
        while (pos_ < text_.size() &&
               (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
            ++pos_;
    }

    Value parse_value(int depth) {
        if (pos_ >= text_.size()) fail(pos_, "unexpected end of text; expected a value");
        const char c = text_[pos_];
        Value value;
        value.offset = pos_;
        if (c == '{' || c == '[') {
            if (depth >= kMaxDepth) fail(pos_, "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
            if (c == '{') parse_object(value, depth + 1);
            else parse_array(value, depth + 1);
        } else if (c == '"') {
            value.kind = Value::Kind::String;
            value.string = parse_string();
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            value.kind = Value::Kind::Integer;
            value.integer = parse_integer();
        } else {
            fail(pos_, "expected an object, array, string or integer, found " + describe(pos_));
        }
        return value;
    }

    void parse_object(Value& value, int depth) {
        value.kind = Value::Kind::Object;
        ++pos_;
        skip_whitespace();
        if (at('}')) {
            ++pos_;
            return;
        }
        std::unordered_set<std::string> keys;
        while (true) {
            skip_whitespace();
            const size_t key_offset = pos_;
            if (!at('"')) fail(pos_, "expected a string key, found " + describe(pos_));
            std::string key = parse_string();
            if (!keys.insert(key).second) fail(key_offset, "duplicate key " + quote(key));
            skip_whitespace();
            expect(':', "after an object key");
            skip_whitespace();
            Value member = parse_value(depth);
            value.object.push_back(Member{std::move(key), std::move(member)});
            skip_whitespace();
            if (at('}')) {
                ++pos_;
                return;
            }
            expect(',', "or '}' in an object");
        }
    }

    void parse_array(Value& value, int depth) {
        value.kind = Value::Kind::Array;
        ++pos_;
        skip_whitespace();
        if (at(']')) {
            ++pos_;
            return;
        }
        while (true) {
            skip_whitespace();
            value.array.push_back(parse_value(depth));
            skip_whitespace();
            if (at(']')) {
                ++pos_;
                return;
            }
            expect(',', "or ']' in an array");
        }
    }

    int64_t parse_integer() {
        const size_t start = pos_;
        const bool negative = at('-');
        if (negative) ++pos_;
        if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9')
            fail(pos_, "expected a digit, found " + describe(pos_));
        if (text_[pos_] == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9')
            fail(start, "leading zeros are not allowed in JSON numbers");
        const uint64_t limit = negative ? uint64_t{1} << 63 : uint64_t{std::numeric_limits<int64_t>::max()};
        uint64_t magnitude = 0;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
            const uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
            if (magnitude > (limit - digit) / 10) fail(start, "integer out of the 64-bit range");
            magnitude = magnitude * 10 + digit;
            ++pos_;
        }
        if (at('.') || at('e') || at('E'))
            fail(start, "only integers are supported, not fractional or exponent numbers");
        return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
    }

    uint32_t parse_hex4() {
        if (pos_ + 4 > text_.size()) fail(pos_, "\\u needs four hex digits");
        uint32_t code = 0;
        for (int i = 0; i < 4; ++i, ++pos_) {
            const char h = text_[pos_];
            code <<= 4;
            if (h >= '0' && h <= '9') code |= static_cast<uint32_t>(h - '0');
            else if (h >= 'a' && h <= 'f') code |= static_cast<uint32_t>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') code |= static_cast<uint32_t>(h - 'A' + 10);
            else fail(pos_, "\\u needs four hex digits, found " + describe(pos_));
        }
        return code;
    }

    // At a '\u': the code point, pairing a high surrogate with the low one after it.
    uint32_t parse_unicode_escape() {
        const size_t start = pos_;
        pos_ += 2;
        const uint32_t first = parse_hex4();
        if (first >= 0xDC00 && first <= 0xDFFF) fail(start, "unpaired low surrogate in \\u escape");
        if (first < 0xD800 || first > 0xDBFF) return first;
        if (text_.substr(pos_, 2) != "\\u") fail(start, "high surrogate in \\u escape not followed by a low one");
        pos_ += 2;
        const uint32_t second = parse_hex4();
        if (second < 0xDC00 || second > 0xDFFF) fail(start, "high surrogate in \\u escape not followed by a low one");
        return 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
    }

    std::string parse_string() {
        const size_t start = pos_;
        ++pos_;
        std::string out;
        while (true) {
            if (pos_ >= text_.size()) fail(start, "unterminated string");
            const unsigned char c = static_cast<unsigned char>(text_[pos_]);
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c == '\\') {
                if (pos_ + 1 >= text_.size()) fail(start, "unterminated string");
                const char e = text_[pos_ + 1];
                switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': append_utf8(out, parse_unicode_escape()); continue;
                default: fail(pos_, "invalid escape \\" + describe(pos_ + 1));
                }
                pos_ += 2;
            } else if (c < 0x20) {
                fail(pos_, "control character " + describe(pos_) + " in a string must be escaped");
            } else {
                const size_t length = utf8_sequence_length(text_, pos_);
                if (length == 0) fail(pos_, "invalid UTF-8 in a string");
                out.append(text_.substr(pos_, length));
                pos_ += length;
            }
        }
    }

    std::string_view text_;
    size_t pos_ = 0;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
    for (const auto& [name, member] : object)
        if (name == key) return &member;
    return nullptr;
}

const char* kind_name(Value::Kind kind) {
    switch (kind) {
    case Value::Kind::String: return "a string";
    case Value::Kind::Integer: return "an integer";
    case Value::Kind::Array: return "an array";
    case Value::Kind::Object: return "an object";
    }
    return "a value";
}

Value parse(std::string_view text) { return Parser(text).parse_document(); }

std::string quote(std::string_view text) {
    std::string out = "\"";
    for (const char ch : text) {
        const unsigned char c = static_cast<unsigned char>(ch);
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20) {
                char buffer[8];
                std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
                out += buffer;
            } else {
                out += ch;
            }
        }
    }
    return out + "\"";
}

bool is_valid_utf8(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
        const size_t length = utf8_sequence_length(text, pos);
        if (length == 0) return false;
        pos += length;
    }
    return true;
}

}  // namespace gputrain::checkpoint::json
