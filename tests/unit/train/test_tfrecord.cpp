#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "train/tfrecord.hpp"

using namespace gputrain::train;

namespace {

uint32_t crc_of(const std::vector<uint8_t>& bytes) { return crc32c(bytes.data(), bytes.size()); }

std::string le(uint64_t v, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
    return s;
}

}  // namespace

TEST_CASE("crc32c matches the published CRC-32C check values") {
    // "123456789" is the standard check string; the 32-byte vectors are RFC 3720's (iSCSI), appendix B.4.
    REQUIRE(crc32c("123456789", 9) == 0xE3069283u);
    REQUIRE(crc_of(std::vector<uint8_t>(32, 0x00)) == 0x8A9136AAu);
    REQUIRE(crc_of(std::vector<uint8_t>(32, 0xFF)) == 0x62A8AB43u);
    std::vector<uint8_t> up(32), down(32);
    for (int i = 0; i < 32; ++i) {
        up[i] = static_cast<uint8_t>(i);
        down[i] = static_cast<uint8_t>(31 - i);
    }
    REQUIRE(crc_of(up) == 0x46DD794Eu);
    REQUIRE(crc_of(down) == 0x113FDB5Cu);
    REQUIRE(crc32c("", 0) == 0u);
}

TEST_CASE("masked_crc32c rotates right by 15 and adds TFRecord's constant") {
    // 0xE3069283 rotated right by 15 is 0x2507C60D; plus 0xa282ead8 is 0xC78AB0E5.
    REQUIRE(masked_crc32c("123456789", 9) == 0xC78AB0E5u);
}

TEST_CASE("tfrecord frames data with its length and both masked CRCs") {
    const std::string record = tfrecord("abc");
    const std::string length = le(3, 8);
    const std::string expected = length + le(masked_crc32c(length.data(), 8), 4) + "abc" + le(masked_crc32c("abc", 3), 4);
    REQUIRE(record.size() == 8 + 4 + 3 + 4);
    REQUIRE(record == expected);
    REQUIRE(tfrecord("").size() == 16);
}

TEST_CASE("scalar_event encodes an Event with one summary value, field by field") {
    // wall_time 1.5: key 0x09 (field 1, fixed64), 1.5 = 0x3FF8000000000000 little-endian.
    // step 300: key 0x10 (field 2, varint), 300 = 0xAC 0x02.
    // summary: key 0x2a (field 5, bytes), 13 bytes: key 0x0a, 11 bytes of Summary.Value:
    //   tag: 0x0a 0x04 "loss"; simple_value: key 0x15 (field 2, fixed32), 0.25f = 0x3E800000.
    const std::string expected = std::string("\x09\x00\x00\x00\x00\x00\x00\xf8\x3f", 9) + "\x10\xac\x02" +
                                 "\x2a\x0d" + "\x0a\x0b" + "\x0a\x04loss" + std::string("\x15\x00\x00\x80\x3e", 5);
    REQUIRE(scalar_event(1.5, 300, "loss", 0.25f) == expected);
}

TEST_CASE("file_version_event names the event format") {
    const std::string expected = std::string("\x09\x00\x00\x00\x00\x00\x00\x00\x00", 9) + "\x1a\x0d" + "brain.Event:2";
    REQUIRE(file_version_event(0.0) == expected);
}

TEST_CASE("session_start_event encodes an Event with SessionLog START at its step") {
    // wall_time 0: key 0x09 + 8 zero bytes; step 301: key 0x10, 301 = 0xAD 0x02;
    // session_log: key 0x3a (field 7, bytes), 2 bytes: status key 0x08 (field 1, varint), START = 1.
    const std::string expected = std::string("\x09\x00\x00\x00\x00\x00\x00\x00\x00", 9) + "\x10\xad\x02" +
                                 "\x3a\x02" + "\x08\x01";
    REQUIRE(session_start_event(0.0, 301) == expected);
}
