// Helpers for the data tests: a temporary folder and writers for IDX and CSV
// files (plain or gzip), so that every reader case runs without a download.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace data_test {

namespace fs = std::filesystem;

class TempDir {
public:
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "gputrain-data-XXXXXX").string();
        if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const fs::path& path() const { return path_; }
    std::string operator/(const std::string& name) const { return (path_ / name).string(); }

private:
    fs::path path_;
};

inline std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& values,
                                      uint8_t type = 0x08) {
    std::vector<uint8_t> out{0, 0, type, static_cast<uint8_t>(dims.size())};
    for (uint32_t d : dims) {
        for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
    }
    out.insert(out.end(), values.begin(), values.end());
    return out;
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
    gzFile f = gzopen(path.c_str(), "wb");
    if (!f) throw std::runtime_error("cannot write " + path);
    if (!bytes.empty()) gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
}

// `path` ending in .gz is written compressed.
inline void write_idx(const std::string& path, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& values) {
    const std::vector<uint8_t> bytes = idx_bytes(dims, values);
    if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
        write_gz(path, bytes);
    } else {
        write_bytes(path, bytes);
    }
}

// An MNIST-style folder: `count` samples of rows x cols, pixel (i, e) = (i * 7 + e) % 256,
// label i % classes. prefix "train" or "t10k".
inline void write_idx_split(const std::string& dir, const std::string& prefix, uint32_t count, uint32_t rows,
                            uint32_t cols, uint32_t classes, bool gz = true) {
    std::vector<uint8_t> pixels(static_cast<size_t>(count) * rows * cols);
    for (size_t i = 0; i < count; ++i) {
        for (size_t e = 0; e < static_cast<size_t>(rows) * cols; ++e) {
            pixels[i * rows * cols + e] = static_cast<uint8_t>((i * 7 + e) % 256);
        }
    }
    std::vector<uint8_t> labels(count);
    for (size_t i = 0; i < count; ++i) labels[i] = static_cast<uint8_t>(i % classes);
    const std::string ext = gz ? ".gz" : "";
    write_idx(dir + "/" + prefix + "-images-idx3-ubyte" + ext, {count, rows, cols}, pixels);
    write_idx(dir + "/" + prefix + "-labels-idx1-ubyte" + ext, {count}, labels);
}

// $GPUTRAIN_CACHE (the token and image caches' folder) set to a temporary
// folder while it lives, then as it was: a test writes no cache into ~/.cache.
class ScopedCacheDir {
public:
    ScopedCacheDir() {
        if (const char* old = std::getenv("GPUTRAIN_CACHE")) had_ = true, old_ = old;
        ::setenv("GPUTRAIN_CACHE", dir_.path().c_str(), 1);
    }
    ~ScopedCacheDir() {
        if (had_)
            ::setenv("GPUTRAIN_CACHE", old_.c_str(), 1);
        else
            ::unsetenv("GPUTRAIN_CACHE");
    }
    const fs::path& path() const { return dir_.path(); }

private:
    TempDir dir_;
    bool had_ = false;
    std::string old_;
};

inline void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace data_test
