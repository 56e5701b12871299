#include <catch2/catch.hpp>

#include "config/scalar_text.hpp"

using namespace gputrain::config;

TEST_CASE("parse_int takes whole decimal integers only") {
    REQUIRE(parse_int("42") == 42);
    REQUIRE(parse_int("-3") == -3);
    REQUIRE(parse_int("+7") == 7);
    REQUIRE_FALSE(parse_int(""));
    REQUIRE_FALSE(parse_int("12abc"));
    REQUIRE_FALSE(parse_int("1.5"));
    REQUIRE_FALSE(parse_int("0x10"));
    REQUIRE_FALSE(parse_int("99999999999999999999"));
    REQUIRE(parse_uint("18446744073709551615") == 18446744073709551615ULL);
    REQUIRE_FALSE(parse_uint("-1"));
}

TEST_CASE("parse_number takes finite numbers only") {
    REQUIRE(parse_number("0.001") == 0.001);
    REQUIRE(parse_number("1e-3") == 0.001);
    REQUIRE(parse_number("5") == 5.0);
    REQUIRE(parse_number("+.5") == 0.5);
    REQUIRE_FALSE(parse_number("inf"));
    REQUIRE_FALSE(parse_number("nan"));
    REQUIRE_FALSE(parse_number(".inf"));
    REQUIRE_FALSE(parse_number("1e-3x"));
}

TEST_CASE("parse_bool takes YAML's words for true and false") {
    REQUIRE(parse_bool("true") == true);
    REQUIRE(parse_bool("False") == false);
    REQUIRE(parse_bool("yes") == true);
    REQUIRE(parse_bool("off") == false);
    REQUIRE_FALSE(parse_bool("1"));
    REQUIRE_FALSE(parse_bool("maybe"));
}

TEST_CASE("format_number gives the shortest text that reads back exactly") {
    REQUIRE(format_number(0.001) == "0.001");
    REQUIRE(format_number(1e-7) == "1e-07");
    REQUIRE(format_number(-0.0) == "0");  // one spelling of zero (a digest must not tell -0.0 from 0)
    REQUIRE(format_number(0.0) == "0");
    REQUIRE(format_number(5.0) == "5");
    for (double x : {1.0 / 255.0, 0.1, 3e-9, 123456.789}) REQUIRE(parse_number(format_number(x)) == x);
}
