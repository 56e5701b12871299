#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <string>

#include "checkpoint/json.hpp"
#include "checkpoint/safetensors.hpp"
#include "core/error.hpp"

namespace gputrain::checkpoint {
namespace {

// safetensors stores little-endian floats and we read them into memory as they are.
static_assert(std::endian::native == std::endian::little, "the safetensors reader assumes a little-endian host");

constexpr uint64_t kLengthBytes = 8;
// The reference implementation's limit: a larger header means a damaged file, and
// refusing it avoids allocating whatever a corrupt length field claims.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char* kNotSafetensors = "the file is truncated or not a safetensors file";

[[noreturn]] void fail(const std::string& path, const std::string& problem) { throw DataError(path + ": " + problem); }

// A tensor's header entry, checked on its own; placement is checked across entries.
struct Entry {
    std::string name;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;
};

std::string list_text(const std::vector<int64_t>& values) {
    std::string s = "[";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(values[i]);
    }
    return s + "]";
}

std::string offsets_text(const Entry& e) { return list_text({static_cast<int64_t>(e.begin), static_cast<int64_t>(e.end)}); }

std::string tensor_label(const std::string& name) { return "tensor '" + name + "'"; }

class InputFile {
public:
    explicit InputFile(const std::string& path) : path_(path) {
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
        struct stat info {};
        if (::fstat(fd_, &info) != 0) {
            const int error = errno;
            ::close(fd_);
            fail(path, std::string("cannot open: ") + std::strerror(error));
        }
        if (S_ISDIR(info.st_mode)) {
            ::close(fd_);
            fail(path, std::string("cannot open: ") + std::strerror(EISDIR));
        }
        size_ = static_cast<uint64_t>(info.st_size);
    }
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;
    ~InputFile() { ::close(fd_); }

    uint64_t size() const { return size_; }

    void read_exact(uint64_t offset, void* destination, uint64_t bytes) const {
        char* p = static_cast<char*>(destination);
        while (bytes > 0) {
            const ssize_t n = ::pread(fd_, p, static_cast<size_t>(std::min<uint64_t>(bytes, 1u << 30)),
                                      static_cast<off_t>(offset));
            if (n < 0) {
                if (errno == EINTR) continue;
                fail(path_, std::string("cannot read: ") + std::strerror(errno));
            }
            if (n == 0) fail(path_, "the file ended early while reading; was it changed during the read?");
            p += n;
            offset += static_cast<uint64_t>(n);
            bytes -= static_cast<uint64_t>(n);
        }
    }

private:
    std::string path_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

std::vector<int64_t> read_shape(const std::string& path, const std::string& name, const json::Value& value) {
    const std::string problem = tensor_label(name) + ": shape must be an array of non-negative integers";
    if (value.kind != json::Value::Kind::Array) fail(path, problem + ", not " + json::kind_name(value.kind));
    std::vector<int64_t> shape;
    for (const auto& d : value.array) {
        if (d.kind != json::Value::Kind::Integer || d.integer < 0) fail(path, problem);
        shape.push_back(d.integer);
    }
    return shape;
}

Entry read_entry(const std::string& path, const std::string& name, const json::Value& value) {
    const std::string who = tensor_label(name);
    if (value.kind != json::Value::Kind::Object)
        fail(path, who + " must be an object, not " + json::kind_name(value.kind));
    for (const auto& [key, member] : value.object) {
        if (key != "dtype" && key != "shape" && key != "data_offsets")
            fail(path, who + " has unknown key '" + key + "' (expected dtype, shape, data_offsets)");
    }
    const json::Value* dtype = value.find("dtype");
    const json::Value* shape = value.find("shape");
    const json::Value* offsets = value.find("data_offsets");
    if (!dtype) fail(path, who + " has no dtype");
    if (!shape) fail(path, who + " has no shape");
    if (!offsets) fail(path, who + " has no data_offsets");

    if (dtype->kind != json::Value::Kind::String)
        fail(path, who + ": dtype must be a string, not " + json::kind_name(dtype->kind));
    if (dtype->string != "F32") fail(path, who + " has dtype " + dtype->string + "; only F32 is supported");

    Entry entry;
    entry.name = name;
    entry.shape = read_shape(path, name, *shape);
    const auto& pair = offsets->array;
    if (offsets->kind != json::Value::Kind::Array || pair.size() != 2 ||
        pair[0].kind != json::Value::Kind::Integer || pair[1].kind != json::Value::Kind::Integer ||
        pair[0].integer < 0 || pair[1].integer < pair[0].integer)
        fail(path, who + ": data_offsets must be [begin, end] with 0 <= begin <= end");
    entry.begin = static_cast<uint64_t>(pair[0].integer);
    entry.end = static_cast<uint64_t>(pair[1].integer);

    uint64_t bytes = sizeof(float);
    for (const int64_t d : entry.shape) {
        if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
            fail(path, who + " has shape " + list_text(entry.shape) + ", too large to address");
    }
    if (entry.end - entry.begin != bytes)
        fail(path, who + " has shape " + list_text(entry.shape) + " (" + std::to_string(bytes) +
                       " bytes of F32) but data_offsets " + offsets_text(entry) + " span " +
                       std::to_string(entry.end - entry.begin) + " bytes");
    return entry;
}

std::map<std::string, std::string> read_metadata(const std::string& path, const json::Value& value) {
    if (value.kind != json::Value::Kind::Object)
        fail(path, std::string("__metadata__ must be an object, not ") + json::kind_name(value.kind));
    std::map<std::string, std::string> metadata;
    for (const auto& [key, member] : value.object) {
        if (member.kind != json::Value::Kind::String)
            fail(path, "__metadata__ value for '" + key + "' must be a string, not " +
                           json::kind_name(member.kind));
        metadata[key] = member.string;
    }
    return metadata;
}

// The reference layout: sorted by offset, the tensors tile the data exactly, from
// byte 0 to its last byte, with no gap, overlap or trailing bytes.
void check_placement(const std::string& path, std::vector<Entry>& entries, uint64_t data_bytes) {
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t covered = 0;
    const Entry* previous = nullptr;
    for (const auto& e : entries) {
        const std::string who = tensor_label(e.name) + " data_offsets " + offsets_text(e);
        if (e.begin < covered)
            fail(path, who + " overlap " + tensor_label(previous->name) + " " + offsets_text(*previous));
        if (e.begin > covered && previous)
            fail(path, who + " leave a gap after " + tensor_label(previous->name) + " " + offsets_text(*previous) +
                           "; tensors must be contiguous");
        if (e.begin > covered)
            fail(path, who + " leave a gap at the start of the data; tensors must be contiguous from byte 0");
        if (e.end > data_bytes)
            fail(path, who + " end past the " + std::to_string(data_bytes) +
                           " bytes of data after the header; the file is truncated");
        covered = e.end;
        previous = &e;
    }
    if (covered != data_bytes)
        fail(path, "the data after the header is " + std::to_string(data_bytes) + " bytes but the tensors end at byte " +
                       std::to_string(covered) + "; the file has trailing bytes or a damaged header");
}

}  // namespace

const Tensor* Contents::find(const std::string& name) const {
    for (const auto& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

Contents load(const std::string& path, const std::function<bool(const std::string&)>& wanted) {
    const InputFile file(path);
    if (file.size() < kLengthBytes)
        fail(path, "file is " + std::to_string(file.size()) + " bytes, shorter than the 8-byte header length; " +
                       kNotSafetensors);
    unsigned char length_bytes[kLengthBytes];
    file.read_exact(0, length_bytes, kLengthBytes);
    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | length_bytes[i];
    if (header_bytes > file.size() - kLengthBytes)
        fail(path, "header length " + std::to_string(header_bytes) + " does not fit in the file (" +
                       std::to_string(file.size()) + " bytes, " + std::to_string(file.size() - kLengthBytes) +
                       " after the 8-byte length); " + kNotSafetensors);
    if (header_bytes > kMaxHeaderBytes)
        fail(path, "header length " + std::to_string(header_bytes) + " is over the limit of " +
                       std::to_string(kMaxHeaderBytes) + " bytes; the file is damaged or not a safetensors file");

    std::string header(header_bytes, '\0');
    file.read_exact(kLengthBytes, header.data(), header_bytes);
    json::Value root;
    try {
        root = json::parse(header);
    } catch (const json::ParseError& e) {
        fail(path, "malformed JSON header at byte " + std::to_string(kLengthBytes + e.byte) + " of the file: " +
                       e.what());
    }
    if (root.kind != json::Value::Kind::Object)
        fail(path, std::string("the header must be a JSON object, not ") + json::kind_name(root.kind));

    Contents contents;
    std::vector<Entry> entries;
    for (const auto& [name, value] : root.object) {
        if (name == "__metadata__") contents.metadata = read_metadata(path, value);
        else entries.push_back(read_entry(path, name, value));
    }
    const uint64_t data_start = kLengthBytes + header_bytes;
    check_placement(path, entries, file.size() - data_start);

    // Placement order is file order: the tensors come back as they lie in the data.
    for (auto& e : entries) {
        if (wanted && !wanted(e.name)) continue;
        Tensor& t = contents.tensors.emplace_back();
        t.name = std::move(e.name);
        t.shape = std::move(e.shape);
        t.data.resize((e.end - e.begin) / sizeof(float));
        file.read_exact(data_start + e.begin, t.data.data(), e.end - e.begin);
    }
    return contents;
}

}  // namespace gputrain::checkpoint
