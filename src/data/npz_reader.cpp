// NPZ archives: the ZIP central directory read by hand (its layout is
// PKWARE's APPNOTE: end-of-central-directory record, then one header per
// member), members inflated with zlib. Only what np.savez and
// np.savez_compressed write: stored or deflated members, no ZIP64.
#include <zlib.h>

#include <cstring>
#include <fstream>

#include "core/error.hpp"
#include "data/npy.hpp"

namespace gputrain::data {

namespace {

uint32_t le(const unsigned char* p, int n) {
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

struct Member {
    std::string name;
    uint16_t method = 0;
    uint32_t compressed = 0, size = 0, local_offset = 0;
};

std::vector<Member> central_directory(const std::string& path, const std::vector<unsigned char>& zip) {
    // The end record is the last 22 bytes, unless a comment (up to 64 KiB) follows it.
    const size_t n = zip.size();
    size_t end = std::string::npos;
    for (size_t back = 22; back <= std::min<size_t>(n, 22 + 65535); ++back)
        if (le(zip.data() + n - back, 4) == 0x06054b50) {
            end = n - back;
            break;
        }
    if (n < 22 || end == std::string::npos) throw DataError(path + ": not an NPZ file (no ZIP directory at its end)");
    const unsigned char* e = zip.data() + end;
    const uint32_t count = le(e + 10, 2), offset = le(e + 16, 4);
    if (count == 0xFFFF || offset == 0xFFFFFFFF)
        throw DataError(path + ": a ZIP64 archive (arrays over 4 GiB) is not supported yet; save the arrays as .npy");
    std::vector<Member> members;
    size_t at = offset;
    for (uint32_t i = 0; i < count; ++i) {
        if (at + 46 > n || le(zip.data() + at, 4) != 0x02014b50)
            throw DataError(path + ": damaged NPZ file (ZIP directory entry " + std::to_string(i) + ")");
        const unsigned char* c = zip.data() + at;
        Member m;
        m.method = static_cast<uint16_t>(le(c + 10, 2));
        m.compressed = le(c + 20, 4);
        m.size = le(c + 24, 4);
        const uint32_t name_len = le(c + 28, 2), extra_len = le(c + 30, 2), comment_len = le(c + 32, 2);
        m.local_offset = le(c + 42, 4);
        if (at + 46 + name_len > n) throw DataError(path + ": damaged NPZ file (a member's name)");
        m.name.assign(reinterpret_cast<const char*>(c + 46), name_len);
        members.push_back(m);
        at += 46 + name_len + extra_len + comment_len;
    }
    return members;
}

}  // namespace

NpyArray read_npz_array(const std::string& path, const std::string& name, bool keep_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError(path + ": cannot open");
    const std::vector<unsigned char> zip((std::istreambuf_iterator<char>(in)), {});
    const std::vector<Member> members = central_directory(path, zip);
    const Member* found = nullptr;
    std::string names;
    for (const Member& m : members) {
        if (m.name == name + ".npy") found = &m;
        names += (names.empty() ? "" : ", ") + m.name.substr(0, m.name.size() - (m.name.ends_with(".npy") ? 4 : 0));
    }
    const std::string where = path + ":" + name + ".npy";
    if (!found) throw DataError(path + ": no array '" + name + "' (it holds " + (names.empty() ? "none" : names) + ")");
    const size_t local = found->local_offset;
    if (local + 30 > zip.size() || le(zip.data() + local, 4) != 0x04034b50)
        throw DataError(where + ": damaged NPZ file (the member's local header)");
    const size_t data = local + 30 + le(zip.data() + local + 26, 2) + le(zip.data() + local + 28, 2);
    if (data + found->compressed > zip.size()) throw DataError(where + ": truncated NPZ file");
    std::vector<char> bytes(found->size);
    if (found->method == 0) {
        if (found->compressed != found->size) throw DataError(where + ": damaged NPZ file (stored sizes differ)");
        std::memcpy(bytes.data(), zip.data() + data, found->size);
    } else if (found->method == 8) {
        z_stream z{};
        if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw DataError(where + ": zlib could not start");
        z.next_in = const_cast<Bytef*>(zip.data() + data);
        z.avail_in = found->compressed;
        z.next_out = reinterpret_cast<Bytef*>(bytes.data());
        z.avail_out = found->size;
        const int rc = inflate(&z, Z_FINISH);
        const uLong produced = z.total_out;
        inflateEnd(&z);
        if (rc != Z_STREAM_END || produced != found->size)
            throw DataError(where + ": damaged compressed data (zlib: " + (rc == Z_DATA_ERROR ? "data error" : "ended early") +
                            ")");
    } else {
        throw DataError(where + ": ZIP compression method " + std::to_string(found->method) +
                        " is not supported (np.savez stores, np.savez_compressed deflates)");
    }
    return parse_npy(where, bytes, keep_bytes);
}

}  // namespace gputrain::data
