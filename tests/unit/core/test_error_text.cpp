// Error messages keep what follows a NUL byte of the input; text made UTF-8 for JSON.
#include <catch2/catch.hpp>

#include <string>

#include "core/error.hpp"
#include "core/utf8.hpp"

using namespace gputrain;

TEST_CASE("an Error keeps the text after a NUL byte, shown as \\x00") {
    const std::string with_nul("field '0.5\0" "0' is not a number", 29);
    REQUIRE(with_nul.size() == 29);
    const DataError e(with_nul);
    REQUIRE(std::string(e.what()) == "field '0.5\\x000' is not a number");
    REQUIRE(std::string(Error("plain").what()) == "plain");
}

TEST_CASE("as_utf8 keeps well-formed UTF-8 and reads other bytes as Latin-1") {
    REQUIRE(as_utf8("runs/caf\xC3\xA9") == "runs/caf\xC3\xA9");  // already UTF-8
    REQUIRE(as_utf8("runs/caf\xE9") == "runs/caf\xC3\xA9");       // Latin-1 e-acute
    REQUIRE(as_utf8("\xC0\xAF") == "\xC3\x80\xC2\xAF");            // an overlong '/' is two bytes, each Latin-1
    REQUIRE(as_utf8("\xF0\x9F\x98\x80 ok") == "\xF0\x9F\x98\x80 ok");
    REQUIRE(as_utf8("\xE2\x82") == "\xC3\xA2\xC2\x82");            // cut short
    REQUIRE(as_utf8("") == "");
}

TEST_CASE("bytes kept as Latin-1 code points come back whole") {
    std::string all;
    for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
    const std::string text = gputrain::to_latin1_code_points(all);
    REQUIRE(text.size() == 128 + 2 * 128);
    REQUIRE(text.substr(0x41, 1) == "A");
    REQUIRE(text.substr(128 + 2 * (0xE9 - 0x80), 2) == "\xC3\xA9");
    std::string back;
    REQUIRE(gputrain::from_latin1_code_points(text, back));
    REQUIRE(back == all);
    REQUIRE(gputrain::from_latin1_code_points("", back));
    REQUIRE(back.empty());
    // Another code point, or text that is not UTF-8, is not such text.
    REQUIRE_FALSE(gputrain::from_latin1_code_points("\xC4\x80", back));          // U+0100
    REQUIRE_FALSE(gputrain::from_latin1_code_points("\xE2\x82\xAC", back));      // the euro sign
    REQUIRE_FALSE(gputrain::from_latin1_code_points("caf\xE9", back));           // a raw Latin-1 byte
}
