#include <catch2/catch.hpp>

#include <limits>

#include "checkpoint/json.hpp"

using namespace gputrain::checkpoint;
using Kind = json::Value::Kind;

namespace {

// The byte and text of the ParseError that parsing `text` throws.
std::pair<size_t, std::string> parse_error(const std::string& text) {
    try {
        json::parse(text);
    } catch (const json::ParseError& e) {
        return {e.byte, e.what()};
    }
    FAIL("no ParseError for: " << text);
    return {};
}

}  // namespace

TEST_CASE("json::parse reads objects, arrays, strings and integers in document order") {
    const json::Value v = json::parse(" {\"b\": [1, -2, 0], \"a\": {\"s\": \"x\"}, \"e\": [], \"o\": {}}\n  ");
    REQUIRE(v.kind == Kind::Object);
    REQUIRE(v.object.size() == 4);
    REQUIRE(v.object[0].key == "b");
    REQUIRE(v.object[1].key == "a");
    const json::Value* b = v.find("b");
    REQUIRE(b->kind == Kind::Array);
    REQUIRE(b->array.size() == 3);
    REQUIRE(b->array[1].integer == -2);
    REQUIRE(b->offset == 7);
    REQUIRE(v.find("a")->find("s")->string == "x");
    REQUIRE(v.find("e")->array.empty());
    REQUIRE(v.find("o")->kind == Kind::Object);
    REQUIRE(v.find("missing") == nullptr);
}

TEST_CASE("json::parse covers the 64-bit integer range") {
    REQUIRE(json::parse("9223372036854775807").integer == std::numeric_limits<int64_t>::max());
    REQUIRE(json::parse("-9223372036854775808").integer == std::numeric_limits<int64_t>::min());
    REQUIRE(parse_error("9223372036854775808") == std::pair<size_t, std::string>{0, "integer out of the 64-bit range"});
    REQUIRE(parse_error("[-9223372036854775809]").first == 1);
}

TEST_CASE("json::parse decodes every escape, surrogate pairs included") {
    REQUIRE(json::parse(R"("q\" b\\ s\/ \b\f\n\r\t")").string == "q\" b\\ s/ \b\f\n\r\t");
    REQUIRE(json::parse(R"("\u0041\u00e9\u20AC")").string == "A\xC3\xA9\xE2\x82\xAC");
    REQUIRE(json::parse(R"("\ud83d\ude00")").string == "\xF0\x9F\x98\x80");
    REQUIRE(json::parse("\"caf\xC3\xA9 \xF0\x9F\x98\x80\"").string == "caf\xC3\xA9 \xF0\x9F\x98\x80");
    REQUIRE(json::parse(R"("\u0000")").string == std::string(1, '\0'));
}

TEST_CASE("json::quote escapes what JSON requires and round-trips through parse") {
    REQUIRE(json::quote("plain") == "\"plain\"");
    REQUIRE(json::quote("a\"b\\c\nd") == R"("a\"b\\c\nd")");
    REQUIRE(json::quote(std::string("\x01\x1f", 2)) == R"("\u0001\u001f")");
    REQUIRE(json::quote("caf\xC3\xA9") == "\"caf\xC3\xA9\"");
    std::string every_byte;
    for (int c = 0; c < 0x80; ++c) every_byte += static_cast<char>(c);
    every_byte += "\xC3\xA9\xF0\x9F\x98\x80";
    REQUIRE(json::parse(json::quote(every_byte)).string == every_byte);
}

TEST_CASE("json::parse reports where malformed text goes wrong") {
    using Error = std::pair<size_t, std::string>;
    REQUIRE(parse_error(R"({"a" 1})") == Error{5, "expected ':' after an object key, found '1'"});
    REQUIRE(parse_error(R"({"a":1 "b":2})") == Error{7, "expected ',' or '}' in an object, found '\"'"});
    REQUIRE(parse_error("[1,2") == Error{4, "expected ',' or ']' in an array, found end of text"});
    REQUIRE(parse_error(R"({"a":1,"a":2})") == Error{7, "duplicate key \"a\""});
    REQUIRE(parse_error(R"({1:2})") == Error{1, "expected a string key, found '1'"});
    REQUIRE(parse_error(R"(["abc)") == Error{1, "unterminated string"});
    REQUIRE(parse_error(R"("a\qb")") == Error{2, "invalid escape \\'q'"});
    REQUIRE(parse_error(R"("\u12G4")") == Error{5, "\\u needs four hex digits, found 'G'"});
    REQUIRE(parse_error(R"("x\ud83d")") == Error{2, "high surrogate in \\u escape not followed by a low one"});
    REQUIRE(parse_error(R"("\ude00")") == Error{1, "unpaired low surrogate in \\u escape"});
    REQUIRE(parse_error("\"a\nb\"") == Error{2, "control character byte 0x0A in a string must be escaped"});
    REQUIRE(parse_error("\"a\xC3(\"") == Error{2, "invalid UTF-8 in a string"});
    REQUIRE(parse_error("\"\xED\xA0\x80\"") == Error{1, "invalid UTF-8 in a string"});
    REQUIRE(parse_error("007") == Error{0, "leading zeros are not allowed in JSON numbers"});
    REQUIRE(parse_error("[1.5]") == Error{1, "only integers are supported, not fractional or exponent numbers"});
    REQUIRE(parse_error("[-]") == Error{2, "expected a digit, found ']'"});
    REQUIRE(parse_error("true") == Error{0, "expected an object, array, string or integer, found 't'"});
    REQUIRE(parse_error("") == Error{0, "unexpected end of text; expected a value"});
    REQUIRE(parse_error("{} x") == Error{3, "unexpected 'x' after the JSON value"});
    REQUIRE(parse_error(std::string(65, '[')) == Error{64, "nesting deeper than 64 levels"});
    REQUIRE(json::parse(std::string(64, '[') + std::string(64, ']')).kind == Kind::Array);
}

TEST_CASE("json::is_valid_utf8 accepts well-formed UTF-8 only") {
    REQUIRE(json::is_valid_utf8("ascii \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
    REQUIRE_FALSE(json::is_valid_utf8("\xC3"));           // cut short
    REQUIRE_FALSE(json::is_valid_utf8("\xC0\xAF"));       // overlong '/'
    REQUIRE_FALSE(json::is_valid_utf8("\xED\xA0\x80"));   // surrogate
    REQUIRE_FALSE(json::is_valid_utf8("\xF4\x90\x80\x80"));   // past U+10FFFF
    REQUIRE_FALSE(json::is_valid_utf8("\xFF"));
}
