#include "data/idx_reader.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/error.hpp"

namespace gputrain::data {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;
// A sanity bound on what the header may claim, so that garbage dims cannot ask for
// terabytes; the largest public IDX sets are well under a gigabyte.
constexpr int64_t kMaxBytes = int64_t{1} << 36;

struct GzCloser {
    void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

std::string hex_bytes(const uint8_t* p, size_t n) {
    std::string s;
    char buf[4];
    for (size_t i = 0; i < n; ++i) {
        std::snprintf(buf, sizeof buf, i ? " %02x" : "%02x", p[i]);
        s += buf;
    }
    return s;
}

std::string type_name(uint8_t type) {
    switch (type) {
        case 0x08: return "unsigned byte";
        case 0x09: return "signed byte";
        case 0x0B: return "short";
        case 0x0C: return "int";
        case 0x0D: return "float";
        case 0x0E: return "double";
        default: return "unknown";
    }
}

class GzInput {
public:
    explicit GzInput(const std::string& path) : path_(path) {
        errno = 0;
        file_.reset(gzopen(path.c_str(), "rb"));
        if (!file_) {
            throw DataError(path + ": cannot open (" + (errno ? std::strerror(errno) : "out of memory") + ")");
        }
        gzbuffer(file_.get(), 1 << 17);
    }

    // Reads up to `n` bytes; fewer only at the end of the data. Throws on damaged gzip.
    size_t read(uint8_t* out, size_t n) {
        size_t total = 0;
        while (total < n) {
            const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - total, 1u << 30));
            const int got = gzread(file_.get(), out + total, chunk);
            if (got < 0) fail();
            if (got == 0) break;
            total += static_cast<size_t>(got);
        }
        // zlib reports a truncated or corrupt stream at its end with 0 bytes and an error set.
        if (total < n) check();
        return total;
    }

    void check() {
        int errnum = Z_OK;
        gzerror(file_.get(), &errnum);
        if (errnum != Z_OK && errnum != Z_STREAM_END) fail();
    }

private:
    [[noreturn]] void fail() {
        int errnum = Z_OK;
        const char* text = gzerror(file_.get(), &errnum);
        if (errnum == Z_ERRNO) throw DataError(path_ + ": read error (" + std::strerror(errno) + ")");
        // zlib prefixes its message with the path, which ours already starts with.
        std::string reason = text ? text : "unknown zlib error";
        if (reason.rfind(path_ + ": ", 0) == 0) reason.erase(0, path_.size() + 2);
        throw DataError(path_ + ": damaged gzip data (" + reason + ")");
    }

    std::string path_;
    GzHandle file_;
};

}  // namespace

IdxArray read_idx(const std::string& path, const RowChooser& choose) {
    GzInput in(path);
    uint8_t magic[4] = {};
    const size_t got_magic = in.read(magic, 4);
    if (got_magic < 4) {
        throw DataError(path + ": truncated: " + std::to_string(got_magic) +
                        " bytes, too short for the 4-byte IDX header");
    }
    if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0) {
        throw DataError(path + ": not an IDX file (magic bytes " + hex_bytes(magic, 4) +
                        ", expected 00 00 08 NN, NN the number of dimensions, 01 or more)");
    }
    if (magic[2] != kUnsignedByte) {
        throw DataError(path + ": IDX type " + hex_bytes(magic + 2, 1) + " (" + type_name(magic[2]) +
                        ") is not supported; only unsigned byte (08) is");
    }

    IdxArray array;
    const int ndims = magic[3];
    std::vector<uint8_t> header(4 * static_cast<size_t>(ndims));
    if (in.read(header.data(), header.size()) < header.size()) {
        throw DataError(path + ": truncated: the header declares " + std::to_string(ndims) +
                        " dimensions but ends before them");
    }
    int64_t expected = 1;
    for (int d = 0; d < ndims; ++d) {
        const uint8_t* p = header.data() + 4 * d;
        const int64_t dim = (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | p[3];
        array.dims.push_back(dim);
        // Checked before multiplying: two large dimensions must not overflow (found by fuzzing).
        if (dim > 0 && expected > kMaxBytes / dim)
            throw DataError(path + ": the header's dimensions claim more than 64 GiB");
        expected *= dim;
    }

    array.file_rows = array.dims[0];
    const RowRange rows = choose ? choose(array.file_rows) : RowRange{0, array.file_rows};
    if (rows.begin < 0 || rows.begin > rows.end || rows.end > array.file_rows)
        throw Error(path + ": asked for samples " + std::to_string(rows.begin) + ".." + std::to_string(rows.end) +
                    " of " + std::to_string(array.file_rows));
    const size_t row_bytes = array.file_rows > 0 ? static_cast<size_t>(expected / array.file_rows) : 0;
    const size_t keep_from = static_cast<size_t>(rows.begin) * row_bytes;
    const size_t keep_to = static_cast<size_t>(rows.end) * row_bytes;
    array.first_row = rows.begin;
    array.dims[0] = rows.end - rows.begin;

    size_t have = 0;  // bytes of data consumed so far
    const auto truncated = [&] {
        return DataError(path + ": truncated: the header's dimensions need " + std::to_string(expected) +
                         " bytes of data, the file holds " + std::to_string(have));
    };
    // Streams past `n` bytes of samples that are not kept (another worker's part).
    const auto skip = [&](size_t n) {
        uint8_t buffer[1 << 16];
        while (n > 0) {
            const size_t want = std::min(n, sizeof buffer);
            const size_t got = in.read(buffer, want);
            have += got;
            n -= got;
            if (got < want) throw truncated();
        }
    };
    skip(keep_from);
    // Grow as data arrives so that a truncated file claiming a huge size fails
    // before allocating all of it.
    constexpr size_t kChunk = size_t{1} << 24;
    while (have < keep_to) {
        const size_t want = std::min(kChunk, keep_to - have);
        const size_t stored = have - keep_from;
        array.bytes.resize(stored + want);
        const size_t got = in.read(array.bytes.data() + stored, want);
        have += got;
        if (got < want) throw truncated();
    }
    skip(static_cast<size_t>(expected) - keep_to);

    uint8_t extra[4096];
    size_t trailing = 0;
    for (size_t got; (got = in.read(extra, sizeof extra)) > 0;) trailing += got;
    if (trailing > 0) {
        throw DataError(path + ": " + std::to_string(trailing) + " trailing bytes after the " +
                        std::to_string(expected) + " bytes of data the header declares");
    }
    return array;
}

std::string find_idx_file(const std::string& dir, const std::string& base) {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const std::string& name : {base, base + ".gz"}) {
        const fs::path p = fs::path(dir) / name;
        if (fs::is_regular_file(p, ec)) return p.string();
    }
    return "";
}

}  // namespace gputrain::data
