#include "data/image_folder.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "data/image_decode.hpp"

namespace gputrain::data {

namespace fs = std::filesystem;

namespace {

// The cache file: this magic, the image count n (uint64), the n images' bytes
// one after another, then their n labels (int32), so that it is written as
// the images are decoded and a streamed set reads rows from offset 16.
constexpr char kMagic[8] = {'G', 'T', 'I', 'M', 'G', 'C', '3', '\n'};
constexpr int64_t kCacheHeader = 16;

struct Listing {
    std::vector<std::string> classes;  // sorted subfolder names
    std::vector<std::pair<std::string, int>> files;  // path, label; classes in turn (see read_image_folder)
    uint64_t digest = 0;               // names, sizes and times of every file, and the options
};

uint64_t fnv(uint64_t h, const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
    return (h ^ 0xFF) * 0x100000001B3ull;
}

Listing list_folder(const std::string& dir, const ImageFolderOptions& o, const std::vector<std::string>& classes) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw DataError("data.path: " + dir + ": no such directory");
    Listing l;
    l.classes = image_classes(dir);
    if (l.classes.empty())
        throw DataError(dir + ": no class folders (format image_folder reads one subfolder of images per class, "
                              "e.g. " + dir + "/cat/1.png)");
    std::vector<std::vector<std::pair<std::string, int>>> by_class;
    l.digest = fnv(0xCBF29CE484222325ull, fmt::format("{}x{}x{} crop {}", o.height, o.width, o.channels,
                                                       o.crop_to_aspect_ratio));
    for (const std::string& name : l.classes) {
        int label = static_cast<int>(&name - l.classes.data());
        if (!classes.empty()) {
            const auto it = std::find(classes.begin(), classes.end(), name);
            if (it == classes.end())
                throw DataError(fmt::format("{}/{}: a class the training folder does not have (its classes: {})", dir,
                                            name, fmt::join(classes, ", ")));
            label = static_cast<int>(it - classes.begin());
        }
        std::vector<fs::path> images;
        for (const auto& entry : fs::directory_iterator(fs::path(dir) / name, ec))
            if (entry.is_regular_file(ec) && is_image_file(entry.path().string())) images.push_back(entry.path());
        if (images.empty())
            throw DataError(fmt::format("{}/{}: an empty class folder (no .png, .jpg or .jpeg files); remove it or "
                                        "add its images",
                                        dir, name));
        std::sort(images.begin(), images.end());
        by_class.emplace_back();
        for (const fs::path& p : images) {
            by_class.back().emplace_back(p.string(), label);
            const auto time = fs::last_write_time(p, ec).time_since_epoch().count();
            l.digest = fnv(l.digest, fmt::format("{}/{} {} {} {}", name, p.filename().string(), fs::file_size(p, ec),
                                                 time, label));
        }
    }
    // The classes in turn (each one's first file, then each one's second...),
    // so that data.limit and validation_split (the last fraction) hold every class.
    for (size_t i = 0;; ++i) {
        bool any = false;
        for (const auto& files : by_class)
            if (i < files.size()) l.files.push_back(files[i]), any = true;
        if (!any) break;
    }
    return l;
}

// One line on stderr that counts up, when decoding takes more than a second.
class PrepProgress {
public:
    PrepProgress(std::string what, size_t total) : what_(std::move(what)), total_(total) {}
    void update(size_t done) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        if (seconds < 1.0 || (done != total_ && seconds - shown_ < 0.5)) return;
        shown_ = seconds;
        if (isatty(STDERR_FILENO))
            std::fprintf(stderr, "\r%s: %zu/%zu images (%.0f%%, %.0f s)%s", what_.c_str(), done, total_,
                         100.0 * static_cast<double>(done) / static_cast<double>(total_), seconds,
                         done == total_ ? "\n" : "");
        else if (done == total_)
            std::fprintf(stderr, "%s: %zu images in %.1f s\n", what_.c_str(), total_, seconds);
    }

private:
    std::string what_;
    size_t total_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    double shown_ = 0;
};

std::string cache_path(const ImageFolderOptions& o, const std::string& dir, uint64_t digest) {
    const std::string base = o.cache_dir.empty() ? default_cache_dir() : o.cache_dir;
    std::string name = fs::weakly_canonical(dir).filename().string();
    if (name.empty()) name = "images";
    return (fs::path(base) / fmt::format("{}-{:016x}.gtc", name, digest)).string();
}

// Reads the cache's labels, and its images unless `with_pixels` is false;
// false when it is missing, of another version, or not whole.
bool read_cache(const std::string& path, Dataset& d, size_t count, size_t image_bytes, bool with_pixels) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return false;
    const auto size = static_cast<uint64_t>(in.tellg());
    in.seekg(0);
    char magic[8];
    uint64_t n = 0;
    // Fewer images than files: data.skip_bad_files skipped some.
    if (!in.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 || !in.read(reinterpret_cast<char*>(&n), 8) ||
        n == 0 || n > count || size != kCacheHeader + n * (image_bytes + 4))
        return false;
    d.labels.resize(n);
    in.seekg(static_cast<std::streamoff>(kCacheHeader + n * image_bytes));
    if (!in.read(reinterpret_cast<char*>(d.labels.data()), static_cast<std::streamsize>(n * 4))) return false;
    if (!with_pixels) return true;
    d.pixels.resize(n * image_bytes);
    in.seekg(kCacheHeader);
    return static_cast<bool>(in.read(reinterpret_cast<char*>(d.pixels.data()), static_cast<std::streamsize>(d.pixels.size())));
}

// Writes a cache as the images are decoded (memory does not grow with a
// streamed set): into a temporary file, renamed into place once whole.
class CacheWriter {
public:
    explicit CacheWriter(std::string path) : path_(std::move(path)) {
        std::error_code ec;
        fs::create_directories(fs::path(path_).parent_path(), ec);
        tmp_ = path_ + ".tmp" + std::to_string(getpid());
        out_.open(tmp_, std::ios::binary | std::ios::trunc);
        const uint64_t none = 0;
        out_.write(kMagic, 8);
        out_.write(reinterpret_cast<const char*>(&none), 8);
    }
    ~CacheWriter() {
        if (!done_) {
            out_.close();
            std::error_code ec;
            fs::remove(tmp_, ec);
        }
    }
    void add(const std::vector<uint8_t>& pixels, int32_t label) {
        out_.write(reinterpret_cast<const char*>(pixels.data()), static_cast<std::streamsize>(pixels.size()));
        labels_.push_back(label);
    }
    const std::vector<int32_t>& labels() const { return labels_; }
    // Whether the cache is in place.
    bool finish() {
        const uint64_t n = labels_.size();
        out_.write(reinterpret_cast<const char*>(labels_.data()), static_cast<std::streamsize>(n * 4));
        out_.seekp(8);
        out_.write(reinterpret_cast<const char*>(&n), 8);
        out_.close();
        std::error_code ec;
        if (!out_) return false;
        fs::rename(tmp_, path_, ec);
        done_ = !ec;
        return done_;
    }

private:
    std::string path_, tmp_;
    std::ofstream out_;
    std::vector<int32_t> labels_;
    bool done_ = false;
};

}  // namespace

std::vector<std::string> image_classes(const std::string& dir) {
    std::error_code ec;
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        if (entry.is_directory(ec) && entry.path().filename().string()[0] != '.')
            out.push_back(entry.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

std::string image_split_dir(const std::string& dir, const std::string& split) {
    std::error_code ec;
    if (fs::is_directory(fs::path(dir) / "train", ec))
        return fs::is_directory(fs::path(dir) / split, ec) ? (fs::path(dir) / split).string() : "";
    return split == "train" ? dir : "";
}

std::string default_cache_dir() {
    if (const char* d = std::getenv("GPUTRAIN_CACHE"); d && *d) return d;
    if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return (fs::path(d) / "gputrain").string();
    if (const char* d = std::getenv("HOME"); d && *d) return (fs::path(d) / ".cache" / "gputrain").string();
    return (fs::temp_directory_path() / "gputrain-cache").string();
}

Dataset read_image_folder(const std::string& dir, const ImageFolderOptions& o, const std::vector<std::string>& classes,
                          std::vector<std::string>* found_classes, const RowChooser& rows) {
    const Listing l = list_folder(dir, o, classes);
    if (found_classes) *found_classes = classes.empty() ? l.classes : classes;
    const size_t image_bytes = static_cast<size_t>(o.height) * o.width * o.channels;
    Dataset all;
    all.type = SampleType::u8;
    all.sample_shape = {o.height, o.width, o.channels};
    const std::string cache = cache_path(o, dir, l.digest);
    // data.stream (or auto, for a set above its share of memory): the images
    // stay in the cache file, decoded into it without being held.
    const bool stream = o.stream || (o.stream_above > 0 && l.files.size() * image_bytes > o.stream_above);
    if (stream && !o.stream)
        spdlog::info("data.stream: auto: the {} images of {} take {}, more than data.stream_memory_fraction of the "
                     "memory available: streamed from their cache",
                     l.files.size(), dir, human_bytes(l.files.size() * image_bytes));
    if (read_cache(cache, all, l.files.size(), image_bytes, /*with_pixels=*/!stream)) {
        // A cache holds fewer images than files when data.skip_bad_files skipped some: said each run.
        if (all.labels.size() < l.files.size())
            spdlog::warn("warning: {}: skipped {} of {} files that are not readable images (data.skip_bad_files; "
                         "counted when {} was made)",
                         dir, l.files.size() - all.labels.size(), l.files.size(), cache);
    } else {
        all.labels.clear();
        all.pixels.clear();
        if (!stream) all.pixels.reserve(l.files.size() * image_bytes);
        CacheWriter writer(cache);
        PrepProgress progress("decoding " + dir + " into " + cache, l.files.size());
        std::vector<std::string> skipped;
        for (size_t i = 0; i < l.files.size(); ++i) {
            const auto& [path, label] = l.files[i];
            try {
                const Image image = resize_image(decode_image(path, o.channels), o.height, o.width,
                                                 o.crop_to_aspect_ratio);
                writer.add(image.pixels, label);
                if (!stream) all.pixels.insert(all.pixels.end(), image.pixels.begin(), image.pixels.end());
            } catch (const DataError& e) {
                if (!o.skip_bad_files) throw DataError(std::string(e.what()) + "; or set data.skip_bad_files: true");
                skipped.push_back(path);
            }
            progress.update(i + 1);
        }
        if (!skipped.empty())
            spdlog::warn("warning: {}: skipped {} of {} files that are not readable images (data.skip_bad_files), "
                         "the first: {}",
                         dir, skipped.size(), l.files.size(), skipped.front());
        all.labels = writer.labels();
        if (all.labels.empty()) throw DataError(dir + ": no readable images");
        if (!writer.finish()) {
            if (stream)
                throw DataError("cannot write the image cache " + cache + ", which data.stream reads the images "
                                "from; set data.cache_dir to a writable folder with room for it");
            spdlog::warn("warning: could not write the image cache {} (set data.cache_dir to a writable folder); "
                         "the images will be decoded again next time",
                         cache);
        }
    }
    const int64_t n = all.size();
    const RowRange keep = rows ? rows(n) : RowRange{0, n};
    if (stream) {  // the rows are read from the cache file when needed, after its magic and count
        all.file = std::make_shared<FileRows>(cache, kCacheHeader);
        all.file_first = keep.begin;
        all.labels = std::vector<int32_t>(all.labels.begin() + keep.begin, all.labels.begin() + keep.end);
        return all;
    }
    if (keep.begin == 0 && keep.end == n) return all;
    Dataset part = all;
    part.labels.assign(all.labels.begin() + keep.begin, all.labels.begin() + keep.end);
    part.pixels.assign(all.pixels.begin() + static_cast<int64_t>(keep.begin * image_bytes),
                       all.pixels.begin() + static_cast<int64_t>(keep.end * image_bytes));
    return part;
}

}  // namespace gputrain::data
