#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "checkpoint/json.hpp"
#include "checkpoint/safetensors.hpp"
#include "core/error.hpp"
#include "scratch.hpp"

using namespace gputrain::checkpoint;
using namespace gputrain::checkpoint::testing;

namespace {

uint32_t bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}

uint32_t little_endian_u32(const std::string& bytes, size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
}

}  // namespace

TEST_CASE("save writes the reference layout byte for byte") {
    ScratchDir dir;
    const std::string path = dir.file("tiny.safetensors");
    const float a[] = {1.0f, -2.0f};
    const float b[] = {0.5f};
    save(path, {{"a", {2}, a}, {"b", {}, b}}, {{"k", "v"}});

    const std::string bytes = read_bytes(path);
    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | static_cast<unsigned char>(bytes[i]);
    const std::string expected_json =
        R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
        R"("b":{"dtype":"F32","shape":[],"data_offsets":[8,12]}})";
    REQUIRE(expected_json.size() == 132);
    REQUIRE(header_bytes == 136);   // padded with spaces to a multiple of 8
    REQUIRE(bytes.size() == 8 + 136 + 12);
    REQUIRE(bytes.substr(8, 132) == expected_json);
    REQUIRE(bytes.substr(8 + 132, 4) == "    ");

    const json::Value header = json::parse(bytes.substr(8, header_bytes));
    REQUIRE(header.find("b")->find("data_offsets")->array[0].integer == 8);

    const size_t data = 8 + header_bytes;
    REQUIRE(bytes.substr(data, 12) == std::string("\x00\x00\x80\x3F\x00\x00\x00\xC0\x00\x00\x00\x3F", 12));
    REQUIRE(little_endian_u32(bytes, data + 4) == bits(-2.0f));
}

TEST_CASE("save then load round-trips values bit for bit, shapes and metadata") {
    ScratchDir dir;
    const std::string path = dir.file("model.safetensors");
    std::vector<float> kernel(3 * 5);
    for (size_t i = 0; i < kernel.size(); ++i) kernel[i] = std::sin(static_cast<float>(i)) * 1e-3f;
    const std::vector<float> special{std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                     -0.0f, std::numeric_limits<float>::denorm_min(),
                                     std::numeric_limits<float>::max()};
    const std::vector<float> bias{0.25f, -0.75f, 3.0f};
    const std::map<std::string, std::string> metadata{
        {"config", "layers:\n  - type: \"dense\"\n    path: C:\\models\\x\n"},
        {"note", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 tab\there"},
        {"control", std::string("nul\0bell\x07", 9)},
        {"empty", ""},
        {"quote\"key\\", "v"},
    };
    save(path, {{"dense/kernel", {3, 5}, kernel.data()}, {"dense/bias", {3}, bias.data()},
                {"special", {5}, special.data()}},
         metadata);

    const Contents c = load(path);
    REQUIRE(c.metadata == metadata);
    REQUIRE(c.tensors.size() == 3);
    REQUIRE(c.tensors[0].name == "dense/kernel");   // file order
    REQUIRE(c.tensors[1].name == "dense/bias");
    REQUIRE(c.tensors[2].name == "special");

    const Tensor* k = c.find("dense/kernel");
    REQUIRE(k->shape == std::vector<int64_t>{3, 5});
    REQUIRE(k->data == kernel);
    REQUIRE(c.find("dense/bias")->data == bias);
    const Tensor* s = c.find("special");
    REQUIRE(s->data.size() == special.size());
    for (size_t i = 0; i < special.size(); ++i) REQUIRE(bits(s->data[i]) == bits(special[i]));
    REQUIRE(c.find("dense") == nullptr);
}

TEST_CASE("a scalar tensor has shape [] and one value; an empty one has no bytes") {
    ScratchDir dir;
    const std::string path = dir.file("scalar.safetensors");
    const float step = 42.5f;
    save(path, {{"empty", {0, 7}, nullptr}, {"step", {}, &step}}, {});

    const std::string bytes = read_bytes(path);
    REQUIRE(bytes.find("\"shape\":[]") != std::string::npos);
    REQUIRE(bytes.find("__metadata__") == std::string::npos);   // omitted when empty, as the reference does

    const Contents c = load(path);
    REQUIRE(c.metadata.empty());
    REQUIRE(c.find("step")->shape.empty());
    REQUIRE(c.find("step")->data == std::vector<float>{42.5f});
    REQUIRE(c.find("empty")->shape == std::vector<int64_t>{0, 7});
    REQUIRE(c.find("empty")->data.empty());
}

TEST_CASE("a file with no tensors round-trips") {
    ScratchDir dir;
    const std::string path = dir.file("none.safetensors");
    save(path, {}, {});
    REQUIRE(read_bytes(path) == safetensors_bytes("{}      ", ""));
    const Contents c = load(path);
    REQUIRE(c.tensors.empty());
    REQUIRE(c.metadata.empty());
}

TEST_CASE("load accepts other writers' layout: any key order, whitespace, escapes") {
    ScratchDir dir;
    const std::string path = dir.file("other.safetensors");
    // Header order differs from data order; metadata last; spaced-out JSON; escaped name.
    const std::string header =
        "{ \"b\" : {\"data_offsets\": [4, 12], \"shape\": [2], \"dtype\": \"F32\"},\n"
        "  \"\\u0061\": {\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]},\n"
        "  \"__metadata__\": {\"format\": \"pt\"} }";
    std::string data;
    for (const float f : {7.0f, 1.0f, 2.0f}) data.append(reinterpret_cast<const char*>(&f), sizeof f);
    write_bytes(path, safetensors_bytes(header, data));

    const Contents c = load(path);
    REQUIRE(c.metadata == std::map<std::string, std::string>{{"format", "pt"}});
    REQUIRE(c.tensors.size() == 2);
    REQUIRE(c.tensors[0].name == "a");   // data order
    REQUIRE(c.tensors[0].shape == std::vector<int64_t>{1, 1});
    REQUIRE(c.tensors[0].data == std::vector<float>{7.0f});
    REQUIRE(c.find("b")->data == std::vector<float>{1.0f, 2.0f});
}

TEST_CASE("load with a filter reads only the tensors it accepts, and still validates the others") {
    ScratchDir dir;
    const std::string path = dir.file("some.safetensors");
    const float w[] = {1.0f, 2.0f, 3.0f};
    const float m[] = {4.0f, 5.0f, 6.0f};
    save(path, {{"dense/kernel", {3}, w}, {"optimizer/adam_m/dense/kernel", {3}, m}}, {{"k", "v"}});
    const auto weights = load(path, [](const std::string& name) { return name.rfind("optimizer/", 0) != 0; });
    REQUIRE(weights.tensors.size() == 1);
    CHECK(weights.tensors[0].name == "dense/kernel");
    CHECK(weights.tensors[0].data == std::vector<float>{1.0f, 2.0f, 3.0f});
    CHECK(weights.metadata.at("k") == "v");
    CHECK(weights.find("optimizer/adam_m/dense/kernel") == nullptr);
    CHECK(load(path).tensors.size() == 2);
    // A tensor left out must still lie inside the file.
    std::string bytes = read_bytes(path);
    bytes.resize(bytes.size() - 4);
    write_bytes(path, bytes);
    REQUIRE_THROWS_AS(load(path, [](const std::string& name) { return name == "dense/kernel"; }),
                      gputrain::DataError);
}
