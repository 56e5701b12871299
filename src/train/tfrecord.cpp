#include "train/tfrecord.hpp"

#include <array>
#include <cstring>

namespace gputrain::train {
namespace {

constexpr std::array<uint32_t, 256> make_crc_table() {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
    return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

void put_fixed(std::string& out, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

void put_varint(std::string& out, uint64_t value) {
    while (value >= 0x80) {
        out += static_cast<char>((value & 0x7f) | 0x80);
        value >>= 7;
    }
    out += static_cast<char>(value);
}

// Protobuf keys: (field number << 3) | wire type.
enum Wire : uint32_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };
void put_key(std::string& out, uint32_t field, Wire wire) { put_varint(out, (field << 3) | wire); }

void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
    put_key(out, field, length_delimited);
    put_varint(out, bytes.size());
    out += bytes;
}

void put_wall_time(std::string& out, double wall_time) {
    uint64_t bits;
    std::memcpy(&bits, &wall_time, sizeof bits);
    put_key(out, 1, fixed64);
    put_fixed(out, bits, 8);
}

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < size; ++i) c = kCrcTable[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
    const uint32_t c = crc32c(data, size);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord(const std::string& data) {
    std::string out;
    put_fixed(out, data.size(), 8);
    put_fixed(out, masked_crc32c(out.data(), 8), 4);
    out += data;
    put_fixed(out, masked_crc32c(data.data(), data.size()), 4);
    return out;
}

std::string file_version_event(double wall_time, const std::string& version) {
    std::string event;
    put_wall_time(event, wall_time);
    put_bytes(event, 3, version);
    return event;
}

std::string session_start_event(double wall_time, int64_t step) {
    std::string session_log;
    put_key(session_log, 1, varint);
    put_varint(session_log, 1);  // SessionLog.START
    std::string event;
    put_wall_time(event, wall_time);
    put_key(event, 2, varint);
    put_varint(event, static_cast<uint64_t>(step));
    put_bytes(event, 7, session_log);
    return event;
}

std::string scalar_event(double wall_time, int64_t step, const std::string& tag, float value) {
    std::string summary_value;
    put_bytes(summary_value, 1, tag);
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    put_key(summary_value, 2, fixed32);
    put_fixed(summary_value, bits, 4);
    std::string summary;
    put_bytes(summary, 1, summary_value);

    std::string event;
    put_wall_time(event, wall_time);
    put_key(event, 2, varint);
    put_varint(event, static_cast<uint64_t>(step));
    put_bytes(event, 5, summary);
    return event;
}

}  // namespace gputrain::train
