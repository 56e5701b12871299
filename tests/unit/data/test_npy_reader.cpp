#include <catch2/catch.hpp>

#include <cstring>

#include "core/error.hpp"
#include "data/npy.hpp"
#include "data_test_files.hpp"

using namespace gputrain;
using namespace gputrain::data;
using namespace data_test;

namespace {

// A version 1.0 file, written byte by byte as NumPy lays it out: magic, version,
// little-endian u16 header length, the dict padded with spaces to end in '\n'
// at a multiple of 64, then `payload`.
std::vector<uint8_t> npy_bytes(const std::string& dict, const std::vector<uint8_t>& payload, uint8_t major = 1) {
    std::string header = dict;
    const size_t prefix = major == 1 ? 10 : 12;
    while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::vector<uint8_t> out{0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
    const size_t n = header.size();
    out.push_back(static_cast<uint8_t>(n & 0xff));
    out.push_back(static_cast<uint8_t>(n >> 8));
    if (major != 1) {
        out.push_back(0);
        out.push_back(0);
    }
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

template <typename T>
std::vector<uint8_t> le_bytes(const std::vector<T>& values) {
    std::vector<uint8_t> out(values.size() * sizeof(T));
    std::memcpy(out.data(), values.data(), out.size());
    return out;
}

std::string error_of(const std::string& path) {
    try {
        read_npy(path);
    } catch (const DataError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("read_npy reads float32, float64 and uint8 C-order arrays") {
    TempDir dir;
    // 1.0f is 00 00 80 3f, -2.5f is 00 00 20 c0 in little-endian bytes.
    write_bytes(dir / "f4.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }",
                                          {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0}));
    NpyArray a = read_npy(dir / "f4.npy");
    REQUIRE(a.dtype == "float32");
    REQUIRE(a.shape == std::vector<int64_t>{2, 1});
    REQUIRE(a.values == std::vector<float>{1.0f, -2.5f});

    write_bytes(dir / "f8.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
                                          le_bytes<double>({0.125, 1e10, -3.0})));
    a = read_npy(dir / "f8.npy");
    REQUIRE(a.dtype == "float64");
    REQUIRE(a.shape == std::vector<int64_t>{3});
    REQUIRE(a.values == std::vector<float>{0.125f, 1e10f, -3.0f});

    // Version 2.0 (4-byte header length), key order and quotes as another writer may choose.
    write_bytes(dir / "u1.npy", npy_bytes("{\"shape\": (2, 2, 1), \"fortran_order\": False, \"descr\": \"|u1\"}",
                                          {0, 7, 200, 255}, 2));
    a = read_npy(dir / "u1.npy");
    REQUIRE(a.dtype == "uint8");
    REQUIRE(a.shape == std::vector<int64_t>{2, 2, 1});
    REQUIRE(a.values == std::vector<float>{0, 7, 200, 255});

    // An empty array is read (the caller decides whether that is an error).
    write_bytes(dir / "empty.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }", {}));
    REQUIRE(read_npy(dir / "empty.npy").values.empty());
}

TEST_CASE("write_npy_float32 writes what read_npy and NumPy's layout expect") {
    TempDir dir;
    write_npy_float32(dir / "out.npy", {2, 3}, {1, 2, 3, 4, 5, 6.5f});
    const std::vector<uint8_t> bytes = read_bytes(dir / "out.npy");
    const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    REQUIRE(bytes == npy_bytes(dict, le_bytes<float>({1, 2, 3, 4, 5, 6.5f})));
    REQUIRE(bytes.size() == 128 + 24);  // 10 + 57 + '\n' bytes of header, padded to 128
    REQUIRE(read_npy(dir / "out.npy").values == std::vector<float>{1, 2, 3, 4, 5, 6.5f});
}

TEST_CASE("read_npy names the problem of a damaged or unsupported file") {
    TempDir dir;
    const std::string p = dir / "x.npy";
    auto check = [&](const std::vector<uint8_t>& bytes, const std::string& message) {
        write_bytes(p, bytes);
        REQUIRE(error_of(p) == p + ": " + message);
    };
    const std::vector<uint8_t> four_floats = le_bytes<float>({1, 2, 3, 4});

    REQUIRE(error_of(dir / "missing.npy") == dir / "missing.npy" + ": cannot open");
    check({'P', 'K', 3, 4}, "not an NPY file (it does not start with \\x93NUMPY)");
    check({0x93, 'N', 'U', 'M', 'P', 'Y', 4, 0, 0, 0}, "NPY format version 4.0 is not supported (1.0, 2.0 and 3.0 are)");
    check({0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0x40}, "truncated: the file ends inside the NPY header length");
    check({0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0x40, 0, '{', '}'},
          "truncated: the NPY header needs 64 bytes, the file holds 2");
    check({0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0, 0, 0, 0x10}, "damaged NPY header: it claims 268435456 bytes");
    check(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", four_floats),
          "dtype '>f4' is not supported; save a little-endian float32, float64 or integer array, e.g. "
          "np.save(path, x.astype('<f4'))");
    check(npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four_floats),
          "dtype '<c8' is not supported; save a little-endian float32, float64 or integer array, e.g. "
          "np.save(path, x.astype('<f4'))");
    check(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four_floats),
          "Fortran-order arrays are not supported; save a C-order array (np.save(path, np.ascontiguousarray(x)))");
    check(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", four_floats),
          "truncated: shape (2, 3) of float32 needs 24 bytes of data, the file holds 16");
    check(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", four_floats),
          "4 trailing bytes after the 12 bytes of data the header declares");
    check(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536, 65536), }", four_floats),
          "the header's shape claims more than 64 GiB");
    check(npy_bytes("{'descr': '<f4', 'fortran_order': False}", four_floats), "damaged NPY header: no 'shape' key");
    check(npy_bytes("{'descr': '<f4', 'shape': (4,)}", four_floats), "damaged NPY header: no 'fortran_order' key");
    check(npy_bytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4,)}", four_floats),
          "damaged NPY header: 'fortran_order' is neither True nor False");
    check(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': [4], }", four_floats),
          "damaged NPY header: 'shape' is not a tuple");
    check(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", four_floats),
          "damaged NPY header: 'shape' holds something other than non-negative integers");
    check(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'extra': 1}", four_floats),
          "damaged NPY header: unknown key 'extra'");
    check(npy_bytes("{'descr': '<f4' 'fortran_order': False, 'shape': (4,)}", four_floats),
          "damaged NPY header: expected ',' or '}' after the value of 'descr'");
    check(npy_bytes("{'descr' '<f4', 'fortran_order': False, 'shape': (4,)}", four_floats),
          "damaged NPY header: expected ':' at byte 9");
    check(npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,)}", four_floats),
          "damaged NPY header: expected a quoted string at byte 10");
}
