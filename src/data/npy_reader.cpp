#include <cstdio>
#include <cstring>
#include <fstream>
#include <string_view>

#include "core/error.hpp"
#include "data/npy.hpp"

namespace gputrain::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// What the header may claim, like the IDX reader's bound: garbage shapes must
// not ask for terabytes.
constexpr int64_t kMaxBytes = int64_t{1} << 36;
// NumPy itself refuses headers longer than this (numpy.lib.format).
constexpr uint32_t kMaxHeaderBytes = 1u << 20;

struct Dtype {
    const char* descr;
    const char* name;
    int64_t size;
    char kind;  // 'f' float, 'i' signed, 'u' unsigned integer
};
// '|u1' is how NumPy writes uint8; '<u1' is the same bytes (likewise int8).
constexpr Dtype kDtypes[] = {{"<f4", "float32", 4, 'f'}, {"<f8", "float64", 8, 'f'}, {"|u1", "uint8", 1, 'u'},
                             {"<u1", "uint8", 1, 'u'},   {"|i1", "int8", 1, 'i'},    {"<i1", "int8", 1, 'i'},
                             {"<i2", "int16", 2, 'i'},   {"<u2", "uint16", 2, 'u'},  {"<i4", "int32", 4, 'i'},
                             {"<u4", "uint32", 4, 'u'},  {"<i8", "int64", 8, 'i'},   {"<u8", "uint64", 8, 'u'}};

// Element i of little-endian data of `d` as a double.
double element(const Dtype& d, const char* data, size_t i) {
    const char* p = data + static_cast<size_t>(d.size) * i;
    const auto load = [p](auto v) {
        std::memcpy(&v, p, sizeof v);
        return static_cast<double>(v);
    };
    if (d.kind == 'f') return d.size == 4 ? load(float{}) : load(double{});
    switch (d.size) {
        case 1: return d.kind == 'i' ? load(int8_t{}) : load(uint8_t{});
        case 2: return d.kind == 'i' ? load(int16_t{}) : load(uint16_t{});
        case 4: return d.kind == 'i' ? load(int32_t{}) : load(uint32_t{});
        default: return d.kind == 'i' ? load(int64_t{}) : load(uint64_t{});
    }
}

// A tiny parser for the one dict literal NumPy writes; anything else is a damaged header.
class HeaderParser {
public:
    HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

    void parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape) {
        bool have_descr = false, have_fortran = false, have_shape = false;
        expect('{');
        while (true) {
            skip_space();
            if (peek() == '}') break;
            const std::string key = string_literal();
            expect(':');
            skip_space();
            if (key == "descr") {
                descr = string_literal();
                have_descr = true;
            } else if (key == "fortran_order") {
                fortran = boolean();
                have_fortran = true;
            } else if (key == "shape") {
                shape = tuple();
                have_shape = true;
            } else {
                fail("unknown key '" + key + "'");
            }
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() != '}') fail("expected ',' or '}' after the value of '" + key + "'");
        }
        ++pos_;
        skip_space();
        if (pos_ != s_.size()) fail("text after the closing '}'");
        if (!have_descr) fail("no 'descr' key");
        if (!have_fortran) fail("no 'fortran_order' key");
        if (!have_shape) fail("no 'shape' key");
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw DataError(path_ + ": damaged NPY header: " + what);
    }
    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
    void skip_space() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t')) ++pos_;
    }
    void expect(char c) {
        skip_space();
        if (peek() != c) fail(std::string("expected '") + c + "' at byte " + std::to_string(pos_));
        ++pos_;
    }
    std::string string_literal() {
        skip_space();
        const char quote = peek();
        if (quote != '\'' && quote != '"') fail("expected a quoted string at byte " + std::to_string(pos_));
        const size_t end = s_.find(quote, pos_ + 1);
        if (end == std::string_view::npos) fail("unterminated string at byte " + std::to_string(pos_));
        std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
        pos_ = end + 1;
        return out;
    }
    bool boolean() {
        for (const auto& [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
            if (s_.substr(pos_, word.size()) == word) {
                pos_ += word.size();
                return value;
            }
        }
        fail("'fortran_order' is neither True nor False");
    }
    std::vector<int64_t> tuple() {
        std::vector<int64_t> dims;
        if (peek() != '(') fail("'shape' is not a tuple");
        ++pos_;
        while (true) {
            skip_space();
            if (peek() == ')') break;
            if (peek() < '0' || peek() > '9') fail("'shape' holds something other than non-negative integers");
            int64_t dim = 0;
            while (peek() >= '0' && peek() <= '9') {
                dim = dim * 10 + (peek() - '0');
                if (dim > kMaxBytes) fail("a 'shape' dimension is larger than 2^36");
                ++pos_;
            }
            dims.push_back(dim);
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() != ')') fail("'shape' is not a tuple of integers");
        }
        ++pos_;
        return dims;
    }

    std::string_view s_;
    const std::string& path_;
    size_t pos_ = 0;
};

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + (shape.size() == 1 ? ",)" : ")");
}

uint32_t little_endian(const unsigned char* p, int bytes) {
    uint32_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

}  // namespace

NpyArray parse_npy_part(const std::string& path, const std::vector<char>& bytes, bool keep_bytes, size_t file_size,
                        size_t* header_only);

NpyArray read_npy(const std::string& path, bool keep_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError(path + ": cannot open");
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
    if (in.bad()) throw DataError(path + ": read error");
    return parse_npy(path, bytes, keep_bytes);
}

NpyArray parse_npy(const std::string& path, const std::vector<char>& bytes, bool keep_bytes) {
    return parse_npy_part(path, bytes, keep_bytes, bytes.size(), nullptr);
}

NpyArray read_npy_header(const std::string& path, int64_t& data_offset) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw DataError(path + ": cannot open");
    const auto file_size = static_cast<size_t>(in.tellg());
    in.seekg(0);
    std::vector<char> bytes(std::min<size_t>(file_size, kMagicSize + 2 + 4 + kMaxHeaderBytes));
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    size_t offset = 0;
    NpyArray header = parse_npy_part(path, bytes, false, file_size, &offset);
    data_offset = static_cast<int64_t>(offset);
    return header;
}

// `bytes` are the file's first bytes (all of them unless `header_only`, which
// then receives where the data start, and the data are not read);
// `file_size` is the whole file's, for the truncation checks.
NpyArray parse_npy_part(const std::string& path, const std::vector<char>& bytes, bool keep_bytes, size_t file_size,
                        size_t* header_only) {
    const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());

    if (bytes.size() < kMagicSize + 2 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
        throw DataError(path + ": not an NPY file (it does not start with \\x93NUMPY)");
    const int major = u[6], minor = u[7];
    if (major < 1 || major > 3 || minor != 0) {
        throw DataError(path + ": NPY format version " + std::to_string(major) + "." + std::to_string(minor) +
                        " is not supported (1.0, 2.0 and 3.0 are)");
    }
    const size_t length_bytes = major == 1 ? 2 : 4;
    const size_t prefix = kMagicSize + 2 + length_bytes;
    if (bytes.size() < prefix) throw DataError(path + ": truncated: the file ends inside the NPY header length");
    const uint32_t header_size = little_endian(u + kMagicSize + 2, static_cast<int>(length_bytes));
    if (header_size > kMaxHeaderBytes) {
        throw DataError(path + ": damaged NPY header: it claims " + std::to_string(header_size) + " bytes");
    }
    if (bytes.size() < prefix + header_size) {
        throw DataError(path + ": truncated: the NPY header needs " + std::to_string(header_size) +
                        " bytes, the file holds " + std::to_string(bytes.size() - prefix));
    }

    std::string descr;
    bool fortran = false;
    NpyArray array;
    HeaderParser(std::string_view(bytes.data() + prefix, header_size), path).parse(descr, fortran, array.shape);

    const Dtype* dtype = nullptr;
    for (const Dtype& d : kDtypes)
        if (descr == d.descr) dtype = &d;
    if (!dtype) {
        throw DataError(path + ": dtype '" + descr + "' is not supported; save a little-endian float32, float64 or "
                        "integer array, e.g. np.save(path, x.astype('<f4'))");
    }
    array.dtype = dtype->name;
    if (fortran && array.shape.size() > 1) {
        throw DataError(path + ": Fortran-order arrays are not supported; save a C-order array "
                        "(np.save(path, np.ascontiguousarray(x)))");
    }

    int64_t count = 1;
    for (int64_t d : array.shape) {
        // Checked before multiplying, so that no product can overflow.
        if (d > 0 && count > kMaxBytes / dtype->size / d)
            throw DataError(path + ": the header's shape claims more than 64 GiB");
        count *= d;
    }
    const size_t data_begin = prefix + header_size;
    const size_t need = static_cast<size_t>(count * dtype->size);
    const size_t have = file_size - data_begin;
    if (have < need) {
        throw DataError(path + ": truncated: shape " + shape_text(array.shape) + " of " + array.dtype + " needs " +
                        std::to_string(need) + " bytes of data, the file holds " + std::to_string(have));
    }
    if (have > need) {
        throw DataError(path + ": " + std::to_string(have - need) + " trailing bytes after the " +
                        std::to_string(need) + " bytes of data the header declares");
    }

    if (header_only) {
        *header_only = data_begin;
        return array;
    }
    // Bytes are copied, not cast in place: the data need not be aligned.
    const char* data = bytes.data() + data_begin;
    if (dtype->size == 1 && dtype->kind == 'u' && keep_bytes) {
        array.bytes.assign(data, data + count);
        return array;
    }
    array.values.resize(static_cast<size_t>(count));
    for (size_t i = 0; i < array.values.size(); ++i) array.values[i] = static_cast<float>(element(*dtype, data, i));
    return array;
}

}  // namespace gputrain::data
