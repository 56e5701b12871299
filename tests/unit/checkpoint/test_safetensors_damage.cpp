#include <catch2/catch.hpp>

#include <unistd.h>

#include "checkpoint/safetensors.hpp"
#include "core/error.hpp"
#include "scratch.hpp"

using namespace gputrain;
using namespace gputrain::checkpoint;
using namespace gputrain::checkpoint::testing;

namespace {

// The message of the DataError that loading `path` throws.
std::string load_error(const std::string& path) {
    try {
        load(path);
    } catch (const DataError& e) {
        return e.what();
    }
    FAIL("load did not throw DataError for " << path);
    return {};
}

// Writes a file with `header` (unpadded) and `data_bytes` zero bytes, returns its load error.
std::string header_error(const ScratchDir& dir, const std::string& header, size_t data_bytes) {
    const std::string path = dir.file("damaged.safetensors");
    write_bytes(path, safetensors_bytes(header, std::string(data_bytes, '\0')));
    return load_error(path);
}

std::string entry(const std::string& name, const std::string& shape, const std::string& offsets,
                  const std::string& dtype = "F32") {
    std::string text = "\"";
    text += name;
    return text + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

// A header object holding the given entries.
std::string object(std::initializer_list<std::string> entries) {
    std::string text = "{";
    for (const auto& e : entries) {
        if (text.size() > 1) text += ',';
        text += e;
    }
    return text + "}";
}

}  // namespace

TEST_CASE("load names the path when the file cannot be opened") {
    ScratchDir dir;
    const std::string missing = dir.file("missing.safetensors");
    REQUIRE(load_error(missing) == missing + ": cannot open: No such file or directory");
    REQUIRE(load_error(dir.path().string()) == dir.path().string() + ": cannot open: Is a directory");
}

TEST_CASE("load rejects a file truncated at any point") {
    ScratchDir dir;
    const std::string good = dir.file("good.safetensors");
    const float a[] = {1.0f, 2.0f};
    const float b[] = {3.0f};
    save(good, {{"a", {2}, a}, {"b", {1}, b}}, {{"epoch", "3"}});
    const std::string bytes = read_bytes(good);
    const size_t header_bytes = static_cast<unsigned char>(bytes[0]);
    REQUIRE(bytes.size() == 8 + header_bytes + 12);

    const std::string cut = dir.file("cut.safetensors");
    for (size_t size = 0; size < bytes.size(); ++size) {
        write_bytes(cut, bytes.substr(0, size));
        INFO("truncated to " << size << " bytes");
        REQUIRE_THROWS_AS(load(cut), DataError);
    }

    write_bytes(cut, bytes.substr(0, 0));
    REQUIRE(load_error(cut) == cut + ": file is 0 bytes, shorter than the 8-byte header length; "
                                     "the file is truncated or not a safetensors file");
    write_bytes(cut, bytes.substr(0, 7));
    REQUIRE(load_error(cut) == cut + ": file is 7 bytes, shorter than the 8-byte header length; "
                                     "the file is truncated or not a safetensors file");
    write_bytes(cut, bytes.substr(0, 8 + 10));
    REQUIRE(load_error(cut) == cut + ": header length " + std::to_string(header_bytes) +
                                   " does not fit in the file (18 bytes, 10 after the 8-byte length); the file is "
                                   "truncated or not a safetensors file");
    write_bytes(cut, bytes.substr(0, 8 + header_bytes + 10));
    REQUIRE(load_error(cut) == cut + ": tensor 'b' data_offsets [8, 12] end past the 10 bytes of data after "
                                     "the header; the file is truncated");
    write_bytes(cut, bytes.substr(0, 8 + header_bytes));
    REQUIRE(load_error(cut) == cut + ": tensor 'a' data_offsets [0, 8] end past the 0 bytes of data after "
                                     "the header; the file is truncated");
}

TEST_CASE("load rejects a damaged header length field") {
    ScratchDir dir;
    const std::string path = dir.file("flipped.safetensors");
    const float a[] = {1.0f, 2.0f};
    save(path, {{"a", {2}, a}}, {});
    const std::string good = read_bytes(path);

    std::string flipped = good;
    flipped[7] = '\x80';   // the top bit of the u64
    write_bytes(path, flipped);
    REQUIRE(load_error(path) == path + ": header length " + std::to_string((uint64_t{0x80} << 56) + static_cast<unsigned char>(good[0])) +
                                    " does not fit in the file (" + std::to_string(good.size()) + " bytes, " +
                                    std::to_string(good.size() - 8) +
                                    " after the 8-byte length); the file is truncated or not a safetensors file");

    // Past the end by less than the length field itself: the message must not say it fits.
    std::string over = good;
    const uint64_t past = good.size() - 3;
    for (int i = 0; i < 8; ++i) over[i] = static_cast<char>((past >> (8 * i)) & 0xFF);
    write_bytes(path, over);
    REQUIRE(load_error(path) == path + ": header length " + std::to_string(past) + " does not fit in the file (" +
                                    std::to_string(good.size()) + " bytes, " + std::to_string(good.size() - 8) +
                                    " after the 8-byte length); the file is truncated or not a safetensors file");

    std::string shorter = good;
    shorter[0] = static_cast<char>(good[0] - 8);   // the JSON is cut short, its tail read as data
    write_bytes(path, shorter);
    const std::string message = load_error(path);
    REQUIRE(message.rfind(path + ": malformed JSON header at byte ", 0) == 0);

    // A big file whose length field asks for more than the reference's 100 MB limit:
    // refused before any allocation. The file is sparse, so this costs no disk.
    std::string huge_length = safetensors_bytes("", "");
    huge_length[3] = '\x10';   // 0x10000000 = 268435456 bytes
    write_bytes(path, huge_length);
    REQUIRE(::truncate(path.c_str(), 300'000'000) == 0);
    REQUIRE(load_error(path) == path + ": header length 268435456 is over the limit of 100000000 bytes; "
                                       "the file is damaged or not a safetensors file");
}

TEST_CASE("load says at which byte the header JSON is malformed") {
    ScratchDir dir;
    const std::string path = dir.file("damaged.safetensors");
    REQUIRE(header_error(dir, R"({"a":{"dtype":"F32" "shape":[1],"data_offsets":[0,4]}})", 4) ==
            path + ": malformed JSON header at byte 28 of the file: expected ',' or '}' in an object, found '\"'");
    REQUIRE(header_error(dir, "", 0) ==
            path + ": malformed JSON header at byte 8 of the file: unexpected end of text; expected a value");
    REQUIRE(header_error(dir, "{\"\xFF\":1}", 0) ==
            path + ": malformed JSON header at byte 10 of the file: invalid UTF-8 in a string");
    REQUIRE(header_error(dir, "[1]", 0) == path + ": the header must be a JSON object, not an array");
}

TEST_CASE("load rejects tensor entries that are incomplete or not F32") {
    ScratchDir dir;
    const std::string p = dir.file("damaged.safetensors") + ": ";
    REQUIRE(header_error(dir, object({entry("dense/kernel", "[2]", "[0,4]", "F16")}), 4) ==
            p + "tensor 'dense/kernel' has dtype F16; only F32 is supported");
    REQUIRE(header_error(dir, R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4) == p + "tensor 'w' has no dtype");
    REQUIRE(header_error(dir, R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4) == p + "tensor 'w' has no shape");
    REQUIRE(header_error(dir, R"({"w":{"dtype":"F32","shape":[1]}})", 4) == p + "tensor 'w' has no data_offsets");
    REQUIRE(header_error(dir, R"({"w":[1]})", 4) == p + "tensor 'w' must be an object, not an array");
    REQUIRE(header_error(dir, R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", 4) ==
            p + "tensor 'w': dtype must be a string, not an integer");
    REQUIRE(header_error(dir, R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4) ==
            p + "tensor 'w' has unknown key 'x' (expected dtype, shape, data_offsets)");
    REQUIRE(header_error(dir, object({entry("w", "[-1]", "[0,4]")}), 4) ==
            p + "tensor 'w': shape must be an array of non-negative integers");
    REQUIRE(header_error(dir, object({entry("w", "\"2\"", "[0,4]")}), 4) ==
            p + "tensor 'w': shape must be an array of non-negative integers, not a string");
    REQUIRE(header_error(dir, object({entry("w", "[4611686018427387904,4]", "[0,4]")}), 4) ==
            p + "tensor 'w' has shape [4611686018427387904, 4], too large to address");
}

TEST_CASE("load rejects offsets that do not match the shape or the data") {
    ScratchDir dir;
    const std::string p = dir.file("damaged.safetensors") + ": ";
    const std::string must_be = "data_offsets must be [begin, end] with 0 <= begin <= end";
    REQUIRE(header_error(dir, object({entry("w", "[2,3]", "[0,20]")}), 20) ==
            p + "tensor 'w' has shape [2, 3] (24 bytes of F32) but data_offsets [0, 20] span 20 bytes");
    REQUIRE(header_error(dir, object({entry("w", "[1]", "[4,0]")}), 4) == p + "tensor 'w': " + must_be);
    REQUIRE(header_error(dir, object({entry("w", "[1]", "[-4,0]")}), 4) == p + "tensor 'w': " + must_be);
    REQUIRE(header_error(dir, object({entry("w", "[1]", "[0]")}), 4) == p + "tensor 'w': " + must_be);
    REQUIRE(header_error(dir, object({entry("w", "[1]", "{}")}), 4) == p + "tensor 'w': " + must_be);
    REQUIRE(header_error(dir, object({entry("w", "[2]", "[0,8]")}), 4) ==
            p + "tensor 'w' data_offsets [0, 8] end past the 4 bytes of data after the header; the file is truncated");
    REQUIRE(header_error(dir, object({entry("a", "[2]", "[0,8]"), entry("b", "[2]", "[4,12]")}), 12) ==
            p + "tensor 'b' data_offsets [4, 12] overlap tensor 'a' [0, 8]");
    REQUIRE(header_error(dir, object({entry("a", "[1]", "[0,4]"), entry("b", "[1]", "[8,12]")}), 12) ==
            p + "tensor 'b' data_offsets [8, 12] leave a gap after tensor 'a' [0, 4]; tensors must be contiguous");
    REQUIRE(header_error(dir, object({entry("a", "[1]", "[4,8]")}), 8) ==
            p + "tensor 'a' data_offsets [4, 8] leave a gap at the start of the data; "
                "tensors must be contiguous from byte 0");
    REQUIRE(header_error(dir, object({entry("a", "[1]", "[0,4]")}), 6) ==
            p + "the data after the header is 6 bytes but the tensors end at byte 4; "
                "the file has trailing bytes or a damaged header");
    REQUIRE(header_error(dir, "{}", 4) ==
            p + "the data after the header is 4 bytes but the tensors end at byte 0; "
                "the file has trailing bytes or a damaged header");
}

TEST_CASE("load rejects __metadata__ that is not an object of strings") {
    ScratchDir dir;
    const std::string p = dir.file("damaged.safetensors") + ": ";
    REQUIRE(header_error(dir, R"({"__metadata__":{"epoch":3}})", 0) ==
            p + "__metadata__ value for 'epoch' must be a string, not an integer");
    REQUIRE(header_error(dir, R"({"__metadata__":{"a":"x","b":["y"]}})", 0) ==
            p + "__metadata__ value for 'b' must be a string, not an array");
    REQUIRE(header_error(dir, R"({"__metadata__":"x"})", 0) == p + "__metadata__ must be an object, not a string");
}
