#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "data/idx_reader.hpp"
#include "data_test_files.hpp"

using namespace gputrain;
using namespace gputrain::data;
using namespace data_test;

namespace {

std::vector<uint8_t> counting_bytes(size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + 5);
    return v;
}

std::string error_of(const std::string& path) {
    try {
        read_idx(path);
    } catch (const DataError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("read_idx round-trips values and dims, plain and gzip") {
    TempDir dir;
    const auto values = counting_bytes(3 * 4 * 5);
    for (const std::string name : {"a-idx3-ubyte", "a-idx3-ubyte.gz"}) {
        write_idx(dir / name, {3, 4, 5}, values);
        const IdxArray array = read_idx(dir / name);
        REQUIRE(array.dims == std::vector<int64_t>{3, 4, 5});
        REQUIRE(array.bytes == values);
    }
    // Dimensions above 2^24 exercise all four big-endian bytes.
    write_idx(dir / "big-idx1-ubyte", {70000}, counting_bytes(70000));
    REQUIRE(read_idx(dir / "big-idx1-ubyte").dims == std::vector<int64_t>{70000});
}

TEST_CASE("read_idx reports a bad magic and an unsupported type") {
    TempDir dir;
    write_bytes(dir / "magic", {0x12, 0x34, 0x08, 0x01, 0, 0, 0, 1, 7});
    const std::string expected = ", expected 00 00 08 NN, NN the number of dimensions, 01 or more)";
    REQUIRE(error_of(dir / "magic") == dir / "magic" + ": not an IDX file (magic bytes 12 34 08 01" + expected);
    write_bytes(dir / "no-dims", {0, 0, 0x08, 0, 7});
    REQUIRE(error_of(dir / "no-dims") == dir / "no-dims" + ": not an IDX file (magic bytes 00 00 08 00" + expected);
    write_bytes(dir / "float", idx_bytes({1}, {0, 0, 0, 0}, 0x0D));
    REQUIRE(error_of(dir / "float") == dir / "float" + ": IDX type 0d (float) is not supported; only unsigned byte (08) is");
    write_bytes(dir / "empty", {});
    REQUIRE(error_of(dir / "empty") == dir / "empty" + ": truncated: 0 bytes, too short for the 4-byte IDX header");
    REQUIRE(error_of(dir / "missing") == dir / "missing" + ": cannot open (No such file or directory)");
}

TEST_CASE("read_idx reports truncated data and trailing bytes") {
    TempDir dir;
    auto bytes = idx_bytes({2, 3}, counting_bytes(6));
    bytes.pop_back();
    bytes.pop_back();
    write_bytes(dir / "short", bytes);
    REQUIRE(error_of(dir / "short") ==
            dir / "short" + ": truncated: the header's dimensions need 6 bytes of data, the file holds 4");
    write_gz(dir / "short.gz", bytes);
    REQUIRE(error_of(dir / "short.gz") ==
            dir / "short.gz" + ": truncated: the header's dimensions need 6 bytes of data, the file holds 4");

    write_bytes(dir / "dims", {0, 0, 8, 3, 0, 0, 0, 2});
    REQUIRE(error_of(dir / "dims") == dir / "dims" + ": truncated: the header declares 3 dimensions but ends before them");

    auto longer = idx_bytes({2, 3}, counting_bytes(9));
    write_bytes(dir / "long", longer);
    REQUIRE(error_of(dir / "long") == dir / "long" + ": 3 trailing bytes after the 6 bytes of data the header declares");
    write_gz(dir / "long.gz", longer);
    REQUIRE(error_of(dir / "long.gz") ==
            dir / "long.gz" + ": 3 trailing bytes after the 6 bytes of data the header declares");
}

TEST_CASE("read_idx reports damaged gzip data with zlib's words") {
    TempDir dir;
    write_idx(dir / "ok.gz", {100, 10}, counting_bytes(1000));
    const auto good = read_bytes(dir / "ok.gz");
    REQUIRE(good.size() > 30);

    SECTION("a wrong checksum in the trailer") {
        auto bad = good;
        bad[bad.size() - 8] ^= 0xFF;  // first byte of the CRC-32
        write_bytes(dir / "crc.gz", bad);
        REQUIRE(error_of(dir / "crc.gz") == dir / "crc.gz" + ": damaged gzip data (incorrect data check)");
    }
    SECTION("a compressed stream cut short") {
        auto cut = good;
        cut.resize(cut.size() - 12);
        write_bytes(dir / "cut.gz", cut);
        REQUIRE(error_of(dir / "cut.gz") == dir / "cut.gz" + ": damaged gzip data (unexpected end of file)");
    }
    SECTION("corrupt bytes inside the deflate stream") {
        auto bad = good;
        for (size_t i = 12; i < 20; ++i) bad[i] = 0xFF;
        write_bytes(dir / "bad.gz", bad);
        REQUIRE_THAT(error_of(dir / "bad.gz"), Catch::StartsWith(dir / "bad.gz" + ": damaged gzip data ("));
    }
}

TEST_CASE("find_idx_file prefers the plain file, then .gz, else empty") {
    TempDir dir;
    REQUIRE(find_idx_file(dir.path().string(), "x-idx1-ubyte").empty());
    write_idx(dir / "x-idx1-ubyte.gz", {1}, {1});
    REQUIRE(find_idx_file(dir.path().string(), "x-idx1-ubyte") == dir / "x-idx1-ubyte.gz");
    write_idx(dir / "x-idx1-ubyte", {1}, {1});
    REQUIRE(find_idx_file(dir.path().string(), "x-idx1-ubyte") == dir / "x-idx1-ubyte");
}

TEST_CASE("read_idx rejects dimensions whose product is too large, without overflowing") {
    TempDir dir;
    // 2^31 x (2^32 - 1) overflowed int64 in the product before the bound was checked (libFuzzer + UBSan found it).
    write_bytes(dir / "huge", idx_bytes({0x80000000u, 0xFFFFFFFFu}, {1, 2, 3}));
    REQUIRE(error_of(dir / "huge") == dir / "huge" + ": the header's dimensions claim more than 64 GiB");
    write_bytes(dir / "big", idx_bytes({0x10000u, 0x10000u, 0x11u}, {1, 2, 3}));
    REQUIRE(error_of(dir / "big") == dir / "big" + ": the header's dimensions claim more than 64 GiB");
    // A zero dimension makes an empty array, whatever follows.
    write_bytes(dir / "zero", idx_bytes({0u, 0xFFFFFFFFu, 0xFFFFFFFFu}, {}));
    REQUIRE(read_idx(dir / "zero").bytes.empty());
}
