#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <set>
#include <string>

#include "checkpoint/json.hpp"
#include "checkpoint/safetensors.hpp"
#include "core/error.hpp"

namespace gputrain::checkpoint {
namespace {

// safetensors stores little-endian floats and we write tensor memory as it is.
static_assert(std::endian::native == std::endian::little, "the safetensors writer assumes a little-endian host");

// The reference implementation pads the header with spaces to this multiple so the
// tensor data that follows is aligned.
constexpr size_t kHeaderAlignment = 8;

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
    throw Error("cannot write checkpoint '" + path + "': " + problem);
}

[[noreturn]] void fail_errno(const std::string& path, int error) { fail(path, std::strerror(error)); }

// Rejects what would produce a file that no reader accepts, before anything is written.
void validate(const std::string& path, const std::vector<TensorRef>& tensors,
              const std::map<std::string, std::string>& metadata) {
    std::set<std::string> names;
    for (const auto& t : tensors) {
        const std::string who = "tensor '" + t.name + "'";
        if (t.name.empty()) fail(path, "a tensor has an empty name");
        if (t.name == "__metadata__") fail(path, "'__metadata__' is reserved and cannot name a tensor");
        if (!json::is_valid_utf8(t.name)) fail(path, "a tensor name is not valid UTF-8");
        if (!names.insert(t.name).second) fail(path, who + " appears twice");
        uint64_t bytes = sizeof(float);
        for (const int64_t d : t.shape) {
            if (d < 0) fail(path, who + " has a negative dimension " + std::to_string(d));
            if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
                fail(path, who + " is too large to address");
        }
        if (bytes > 0 && t.data == nullptr) fail(path, who + " has no data");
    }
    for (const auto& [key, value] : metadata) {
        if (!json::is_valid_utf8(key)) fail(path, "a metadata key is not valid UTF-8");
        if (!json::is_valid_utf8(value)) fail(path, "metadata value for '" + key + "' is not valid UTF-8");
    }
}

uint64_t tensor_bytes(const TensorRef& t) {
    uint64_t elements = 1;
    for (const int64_t d : t.shape) elements *= static_cast<uint64_t>(d);
    return elements * sizeof(float);
}

// Compact JSON as the reference writer emits it: __metadata__ first (omitted when
// empty), then the tensors in data order, padded with spaces.
std::string header_json(const std::vector<TensorRef>& tensors, const std::map<std::string, std::string>& metadata) {
    std::string header = "{";
    if (!metadata.empty()) {
        header += "\"__metadata__\":{";
        bool first = true;
        for (const auto& [key, value] : metadata) {
            if (!first) header += ',';
            header += json::quote(key) + ':' + json::quote(value);
            first = false;
        }
        header += '}';
    }
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        if (header.size() > 1) header += ',';
        header += json::quote(t.name) + ":{\"dtype\":\"F32\",\"shape\":[";
        for (size_t i = 0; i < t.shape.size(); ++i) {
            if (i) header += ',';
            header += std::to_string(t.shape[i]);
        }
        const uint64_t end = offset + tensor_bytes(t);
        header += "],\"data_offsets\":[" + std::to_string(offset) + ',' + std::to_string(end) + "]}";
        offset = end;
    }
    header += '}';
    header.append((kHeaderAlignment - header.size() % kHeaderAlignment) % kHeaderAlignment, ' ');
    return header;
}

// The temporary file under construction: closed and removed unless committed.
class TempFile {
public:
    TempFile(std::string final_path, std::string temp_path)
        : final_path_(std::move(final_path)), temp_path_(std::move(temp_path)) {
        fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd_ < 0) fail_errno(final_path_, errno);
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    ~TempFile() {
        if (fd_ >= 0) ::close(fd_);
        if (!committed_) ::unlink(temp_path_.c_str());
    }

    void write_all(const void* data, uint64_t bytes) {
        const char* p = static_cast<const char*>(data);
        while (bytes > 0) {
            // Linux writes at most ~2 GiB per call; loop over short writes.
            const ssize_t n = ::write(fd_, p, static_cast<size_t>(std::min<uint64_t>(bytes, 1u << 30)));
            if (n < 0) {
                if (errno == EINTR) continue;
                fail_errno(final_path_, errno);
            }
            p += n;
            bytes -= static_cast<uint64_t>(n);
        }
    }

    // fsync, close, rename over the final path: after this the file is complete or absent.
    void commit() {
        if (::fsync(fd_) != 0) fail_errno(final_path_, errno);
        const int fd = fd_;
        fd_ = -1;
        if (::close(fd) != 0) fail_errno(final_path_, errno);
        if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) fail_errno(final_path_, errno);
        committed_ = true;
    }

private:
    std::string final_path_, temp_path_;
    int fd_ = -1;
    bool committed_ = false;
};

// Without this the rename itself may be lost on a crash even though the data is on disk.
void sync_parent_folder(const std::string& path) {
    const size_t slash = path.rfind('/');
    const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail_errno(path, errno);
    const int result = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    if (result != 0) fail_errno(path, error);
}

}  // namespace

void save(const std::string& path, const std::vector<TensorRef>& tensors,
          const std::map<std::string, std::string>& metadata) {
    validate(path, tensors, metadata);
    const std::string header = header_json(tensors, metadata);
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));

    TempFile file(path, path + ".tmp-" + std::to_string(::getpid()));
    file.write_all(length, sizeof length);
    file.write_all(header.data(), header.size());
    for (const auto& t : tensors) file.write_all(t.data, tensor_bytes(t));
    file.commit();
    sync_parent_folder(path);
}

}  // namespace gputrain::checkpoint
