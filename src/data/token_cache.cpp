#include "data/token_cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace gputrain::data {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'G', 'T', 'T', 'O', 'K', 'C', '1', '\n'};
constexpr uint32_t kVersion = 1;  // raise it when tokenizing or the layout changes: old files are then retokenized

// Native byte order (the version reads otherwise on a machine of the other one).
struct Header {
    char magic[8];
    uint32_t version;
    uint32_t width;  // bytes per id: 2 or 4
    uint64_t count;  // ids
    uint32_t tokenizer;
    uint32_t reserved;
    uint64_t vocab_size;
    uint64_t key_bytes;
    uint64_t vocabulary_bytes;
    uint64_t checksum;  // of every byte after the header
};
static_assert(sizeof(Header) == 64);

uint32_t tokenizer_code(config::Tokenizer t) {
    switch (t) {
        case config::Tokenizer::bytes: return 1;
        case config::Tokenizer::chars: return 2;
        case config::Tokenizer::sentencepiece: return 3;
    }
    return 0;
}

uint64_t fnv(const std::string& s) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
    return h;
}

// A 64-bit checksum of a stream of bytes, 8 at a time (a few ms for 10 MB).
class Checksum {
public:
    void update(const void* data, size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        total_ += n;
        if (fill_ > 0) {  // fill_ < 8 between calls
            const size_t take = std::min(n, 8 - fill_);
            std::memcpy(tail_ + fill_, p, take);
            fill_ += take, p += take, n -= take;
            if (fill_ < 8) return;
            word(load(tail_));
            fill_ = 0;
        }
        for (; n >= 8; p += 8, n -= 8) word(load(p));
        std::memcpy(tail_, p, n);  // n < 8
        fill_ = n;
    }
    uint64_t finish() const {
        Checksum c = *this;
        unsigned char last[8] = {};
        std::memcpy(last, c.tail_, c.fill_);
        c.word(load(last));
        c.word(c.total_);
        return c.h_ ^ (c.h_ >> 31);
    }

private:
    static uint64_t load(const unsigned char* p) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        return w;
    }
    void word(uint64_t w) { h_ = std::rotl(h_ ^ (w * 0x9E3779B97F4A7C15ull), 29) * 0xBF58476D1CE4E5B9ull; }
    uint64_t h_ = 0x243F6A8885A308D3ull;
    uint64_t total_ = 0;
    unsigned char tail_[8] = {};
    size_t fill_ = 0;
};

size_t padding(size_t n) { return (8 - n % 8) % 8; }

std::string error_text(int err) { return std::strerror(err); }

// A read-only mapping of a whole file, unmapped with its last owner.
struct Mapping {
    void* address = MAP_FAILED;
    size_t size = 0;
    Mapping() = default;
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() {
        if (address != MAP_FAILED) ::munmap(address, size);
    }
    const unsigned char* bytes() const { return static_cast<const unsigned char*>(address); }
};

// The vocabulary a cache stores: chars: its characters (UTF-8); sentencepiece: the model.
std::string vocabulary_blob(const TextTokens& t) {
    if (t.tokenizer == config::Tokenizer::sentencepiece) return t.tokenizer_model;
    if (t.tokenizer == config::Tokenizer::chars) return vocabulary_utf8(t.vocabulary);
    return "";
}

// The first line of `now` that `stored` does not have, for the info line.
std::string first_change(const std::string& stored, const std::string& now) {
    std::istringstream in(now);
    for (std::string line; std::getline(in, line);)
        if (stored.find(line + "\n") == std::string::npos) {
            // "file SIZE MTIME PATH": the path has changed since.
            if (line.rfind("file ", 0) == 0) {
                size_t at = 5;
                for (int field = 0; field < 2 && at != std::string::npos; ++field) at = line.find(' ', at + 1);
                if (at != std::string::npos) return line.substr(at + 1) + " changed since it was written";
            }
            return "it was written for another input (now: " + line + ")";
        }
    return "it was written for other files";
}

}  // namespace

std::string model_identity(const std::string& model_bytes) {
    return fmt::format("model of {} bytes, hash {:016x}", model_bytes.size(), fnv(model_bytes));
}

TokenCacheKey token_cache_key(const std::vector<std::string>& files, config::Tokenizer tokenizer,
                              const std::string& model_identity) {
    std::string stays = fmt::format("tokenizer {}\n", config::name_of(tokenizer));
    if (!model_identity.empty()) stays += "sentencepiece " + model_identity + "\n";
    std::string changes;
    for (const std::string& file : files) {
        std::error_code ec;
        fs::path p = fs::weakly_canonical(fs::absolute(file, ec), ec);
        if (p.empty()) p = file;
        const auto size = fs::file_size(p, ec);
        const uint64_t bytes = ec ? 0 : static_cast<uint64_t>(size);
        const auto time = fs::last_write_time(p, ec);
        const int64_t ticks = ec ? 0 : static_cast<int64_t>(time.time_since_epoch().count());
        stays += "path " + p.string() + "\n";
        changes += fmt::format("file {} {} {}\n", bytes, ticks, p.string());
    }
    TokenCacheKey key;
    key.text = stays + changes;
    std::error_code ec;
    std::string stem = files.size() == 1 ? fs::path(files[0]).stem().string()
                                         : fs::weakly_canonical(fs::absolute(files.at(0), ec), ec).parent_path().filename().string();
    stem.erase(std::remove_if(stem.begin(), stem.end(), [](char c) { return c == ' ' || c == '/'; }), stem.end());
    if (stem.empty()) stem = "text";
    key.name = fmt::format("{}-{:016x}.tokens", stem, fnv(stays));
    return key;
}

std::string write_token_cache(const std::string& path, const std::string& key, const TextTokens& tokens) {
    std::error_code ec;
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) {
        fs::create_directories(parent, ec);
        if (ec) return "cannot make " + parent.string() + ": " + ec.message();
    }
    std::random_device random;
    const std::string tmp = fmt::format("{}.tmp{}-{:08x}", path, ::getpid(), random());
    const std::string vocabulary = vocabulary_blob(tokens);
    Header h{};
    std::memcpy(h.magic, kMagic, 8);
    h.version = kVersion;
    h.width = tokens.vocab_size <= 65536 ? 2 : 4;
    h.count = tokens.ids.size();
    h.tokenizer = tokenizer_code(tokens.tokenizer);
    h.vocab_size = static_cast<uint64_t>(tokens.vocab_size);
    h.key_bytes = key.size();
    h.vocabulary_bytes = vocabulary.size();
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) return "cannot create " + tmp + ": " + error_text(errno);
        Checksum sum;
        const auto put = [&](const void* data, size_t n) {
            out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
            sum.update(data, n);
        };
        out.write(reinterpret_cast<const char*>(&h), sizeof h);  // its checksum once the rest is written
        put(key.data(), key.size());
        put(vocabulary.data(), vocabulary.size());
        const char zeros[8] = {};
        put(zeros, padding(key.size() + vocabulary.size()));
        tokens.ids.visit([&](auto ids) {
            constexpr size_t kChunk = 1 << 16;
            std::vector<uint16_t> narrow16;
            std::vector<uint32_t> wide32;
            for (size_t at = 0; at < ids.size(); at += kChunk) {
                const auto part = ids.subspan(at, std::min(kChunk, ids.size() - at));
                if (h.width == 2) {
                    narrow16.assign(part.begin(), part.end());
                    put(narrow16.data(), narrow16.size() * 2);
                } else {
                    wide32.assign(part.begin(), part.end());
                    put(wide32.data(), wide32.size() * 4);
                }
            }
        });
        h.checksum = sum.finish();
        out.seekp(0);
        out.write(reinterpret_cast<const char*>(&h), sizeof h);
        out.close();
        if (!out) {
            const int err = errno;
            fs::remove(tmp, ec);
            return "cannot write " + tmp + (err ? ": " + error_text(err) : "");
        }
    }
    fs::rename(tmp, path, ec);
    if (ec) {
        const std::string why = "cannot rename " + tmp + " to " + path + ": " + ec.message();
        fs::remove(tmp, ec);
        return why;
    }
    return "";
}

std::optional<TextTokens> read_token_cache(const std::string& path, const std::string& key, const std::string& files,
                                           std::string& why) {
    why.clear();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT && errno != ENOTDIR) why = "cannot be read: " + error_text(errno);
        return std::nullopt;
    }
    struct stat st{};
    if (::fstat(fd, &st) != 0) {
        why = "cannot be read: " + error_text(errno);
        ::close(fd);
        return std::nullopt;
    }
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size < sizeof(Header)) {
        why = fmt::format("not whole ({} bytes, less than its header)", size);
        ::close(fd);
        return std::nullopt;
    }
    auto map = std::make_shared<Mapping>();
    map->size = static_cast<size_t>(size);
    map->address = ::mmap(nullptr, map->size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    ::close(fd);
    if (map->address == MAP_FAILED) {
        why = fs::is_directory(path) ? std::string("is a folder, not a file") : "cannot be mapped: " + error_text(map_errno);
        return std::nullopt;
    }
    Header h;
    std::memcpy(&h, map->bytes(), sizeof h);
    if (std::memcmp(h.magic, kMagic, 8) != 0 || h.version != kVersion) {
        why = "not a token cache of this version";
        return std::nullopt;
    }
    // Each length checked against the file's size before any sum, so that none overflows.
    const uint64_t after = size - sizeof(Header);
    if ((h.width != 2 && h.width != 4) || h.key_bytes > after || h.vocabulary_bytes > after - h.key_bytes ||
        h.count > after / h.width || h.count == 0 || h.vocab_size == 0 ||
        (h.width == 2 && h.vocab_size > 65536)) {
        why = "corrupt (its header is not one this program writes)";
        return std::nullopt;
    }
    const uint64_t ids_at = sizeof(Header) + h.key_bytes + h.vocabulary_bytes + padding(h.key_bytes + h.vocabulary_bytes);
    if (ids_at > size || size - ids_at != h.count * h.width) {
        why = fmt::format("not whole ({} bytes where its header says {})", size, ids_at + h.count * h.width);
        return std::nullopt;
    }
    const std::string stored(reinterpret_cast<const char*>(map->bytes() + sizeof(Header)), h.key_bytes);
    if (stored != key) {
        why = first_change(stored, key);
        return std::nullopt;
    }
    ::madvise(map->address, map->size, MADV_SEQUENTIAL);
    Checksum sum;
    sum.update(map->bytes() + sizeof(Header), after);
    if (sum.finish() != h.checksum) {
        why = "corrupt (its checksum does not match its bytes)";
        return std::nullopt;
    }
    TextTokens t;
    const std::string vocabulary(reinterpret_cast<const char*>(map->bytes() + sizeof(Header) + h.key_bytes),
                                 h.vocabulary_bytes);
    switch (h.tokenizer) {
        case 1: t.tokenizer = config::Tokenizer::bytes; break;
        case 2: t.tokenizer = config::Tokenizer::chars; break;
        case 3: t.tokenizer = config::Tokenizer::sentencepiece; break;
        default: why = "corrupt (an unknown tokenizer)"; return std::nullopt;
    }
    t.vocab_size = static_cast<int64_t>(h.vocab_size);
    if (t.tokenizer == config::Tokenizer::chars) {
        t.vocabulary = vocabulary_from_utf8(vocabulary);
        if (t.vocabulary.size() != h.vocab_size) {
            why = "corrupt (its vocabulary is not its vocabulary size)";
            return std::nullopt;
        }
    } else if (t.tokenizer == config::Tokenizer::sentencepiece) {
        t.tokenizer_model = vocabulary;
    }
    t.files = files;
    const unsigned char* ids = map->bytes() + ids_at;
    const size_t count = static_cast<size_t>(h.count);
    if (h.width == 2)
        t.ids = TokenIds(map, std::span<const uint16_t>(reinterpret_cast<const uint16_t*>(ids), count));
    else
        t.ids = TokenIds(map, std::span<const uint32_t>(reinterpret_cast<const uint32_t*>(ids), count));
    t.ids.set_mapped_file(path);
    return t;
}

TextTokens cached_text_tokens(const std::vector<std::string>& files, config::Tokenizer tokenizer,
                              const std::string& model_identity, const std::function<std::string()>& model,
                              const std::string& cache_dir) {
    const auto seconds_since = [](std::chrono::steady_clock::time_point start) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    // The key before the text is read: a file changed meanwhile is tokenized again next time.
    const TokenCacheKey key = token_cache_key(files, tokenizer, model_identity);
    const std::string path = (fs::path(cache_dir) / key.name).string();
    const auto start = std::chrono::steady_clock::now();
    std::string why;
    if (std::optional<TextTokens> cached = read_token_cache(path, key.text, files_description(files), why)) {
        spdlog::info("{}: {} tokens from the token cache {} ({:.3f} s)", cached->files, cached->ids.size(), path,
                     seconds_since(start));
        return std::move(*cached);
    }
    if (!why.empty()) spdlog::info("the token cache {}: {}; the text is tokenized again", path, why);
    const auto tokenizing = std::chrono::steady_clock::now();
    TextTokens tokens = read_text(files, tokenizer, model ? model() : std::string());
    const double took = seconds_since(tokenizing);
    const std::string failed = write_token_cache(path, key.text, tokens);
    if (failed.empty()) {
        spdlog::info("{}: {} tokens, tokenized in {:.3f} s, written to the token cache {} ({} bytes a token)",
                     tokens.files, tokens.ids.size(), took, path, tokens.vocab_size <= 65536 ? 2 : 4);
        // The file's ids from now on (2 bytes a token where they fit), as later starts read them: the
        // held ids (4 bytes a token) are freed, and a first run trains on what a second would.
        std::string unused;
        if (std::optional<TextTokens> mapped = read_token_cache(path, key.text, tokens.files, unused))
            return std::move(*mapped);
    } else
        spdlog::warn("warning: could not write the token cache ({}); the text will be tokenized again next time "
                     "({})",
                     failed,
                     fs::is_directory(path) ? "a folder has the cache file's name: remove " + path
                                            : std::string("set GPUTRAIN_CACHE to a writable folder"));
    return tokens;
}

}  // namespace gputrain::data
