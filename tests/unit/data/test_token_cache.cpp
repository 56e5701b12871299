// format: text: the token cache (data/token_cache.hpp): uint16 and uint32 ids
// round-trip and are read mapped, in place; a text whose size or
// modification time changed, a short or corrupt file, are not used (the text
// is tokenized again and the file rewritten); a folder that cannot be written
// is no error.
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/utf8.hpp"
#include "data/dataset.hpp"
#include "data/sentencepiece_text.hpp"
#include "data/text_reader.hpp"
#include "data/token_cache.hpp"
#include "data_test_files.hpp"

using namespace gputrain;
using namespace gputrain::data;
using namespace data_test;

namespace {

std::string write_file(const TempDir& dir, const std::string& name, const std::string& text) {
    const std::string path = dir / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

TextTokens cached(const std::vector<std::string>& files, const TempDir& cache,
                  config::Tokenizer tokenizer = config::Tokenizer::chars) {
    return cached_text_tokens(files, tokenizer, "", nullptr, cache.path().string());
}

// The file's inode: a new one when the cache is rewritten (a temporary file renamed over it).
ino_t inode(const std::string& file) {
    struct stat s{};
    REQUIRE(::stat(file.c_str(), &s) == 0);
    return s.st_ino;
}

// The one cache file of `cache`.
std::string cache_file(const TempDir& cache) {
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(cache.path())) found.push_back(e.path().string());
    REQUIRE(found.size() == 1);
    return found[0];
}

std::string play() {
    std::string text;
    for (int i = 0; i < 300; ++i) text += i % 5 == 0 ? "ÉLISE:\nMy lord.\n\n" : "ROMEO:\nSweet night, fair day.\n\n";
    return text;
}

}  // namespace

TEST_CASE("token cache: chars and bytes ids round-trip as uint16, mapped, with the same vocabulary and windows",
          "[text][cache]") {
    TempDir dir, cache;
    const std::string path = write_file(dir, "play.txt", play());
    for (const auto tokenizer : {config::Tokenizer::chars, config::Tokenizer::bytes}) {
        const TextTokens fresh = read_text({path}, tokenizer);
        const TextTokens first = cached({path}, cache, tokenizer);  // tokenized, written, then mapped
        REQUIRE(first.ids.mapped());
        REQUIRE(first.ids.width() == 2);
        REQUIRE(first.ids.to_vector() == fresh.ids.to_vector());
        const TextTokens again = cached({path}, cache, tokenizer);  // read from the file
        REQUIRE(again.ids.mapped());
        REQUIRE(again.ids.width() == 2);
        REQUIRE(again.ids.to_vector() == fresh.ids.to_vector());
        REQUIRE(again.vocabulary == fresh.vocabulary);
        REQUIRE(again.vocab_size == fresh.vocab_size);
        REQUIRE(again.tokenizer == tokenizer);
        REQUIRE(again.files == path);
        REQUIRE(window_count(again, 16) == window_count(fresh, 16));
        const Dataset a = text_windows(fresh, 16, 2, 40), b = text_windows(again, 16, 2, 40);
        REQUIRE(model_inputs(a, 0, a.size()) == model_inputs(b, 0, b.size()));
        REQUIRE(sample_labels(a, 0, a.size()) == sample_labels(b, 0, b.size()));
        REQUIRE(b.tokens->width() == 2);  // the windows read the mapped uint16 ids
        REQUIRE(a.vocabulary == b.vocabulary);
        // 2 bytes an id after the 64-byte header, the key and the vocabulary (padded to 8 bytes).
        const TokenCacheKey key = token_cache_key({path}, tokenizer, "");
        const size_t head = 64 + key.text.size() + vocabulary_utf8(fresh.vocabulary).size();
        REQUIRE(fs::file_size(cache.path() / key.name) == (head + 7) / 8 * 8 + 2 * fresh.ids.size());
    }
    size_t files = 0;  // one per tokenizer
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(cache.path())) ++files;
    REQUIRE(files == 2);
}

TEST_CASE("token cache: a vocabulary over 65,536 tokens stores uint32 ids", "[text][cache]") {
    TempDir dir;
    SECTION("written and read directly") {
        TextTokens t;
        t.tokenizer = config::Tokenizer::sentencepiece;
        t.vocab_size = 70000;
        t.tokenizer_model = std::string("model\0bytes", 11);
        std::vector<uint32_t> ids;
        for (uint32_t i = 0; i < 100001; ++i) ids.push_back((i * 7919u) % 70000u);
        t.ids = ids;
        const std::string path = dir / "big.tokens";
        REQUIRE(write_token_cache(path, "the key\n", t).empty());
        std::string why;
        const std::optional<TextTokens> back = read_token_cache(path, "the key\n", "files", why);
        REQUIRE(back);
        REQUIRE(why.empty());
        REQUIRE(back->ids.mapped());
        REQUIRE(back->ids.width() == 4);
        REQUIRE(back->ids == ids);
        REQUIRE(back->vocab_size == 70000);
        REQUIRE(back->tokenizer_model == t.tokenizer_model);
        REQUIRE(back->files == "files");
        REQUIRE_FALSE(read_token_cache(path, "another key\n", "files", why));
        REQUIRE(why == "it was written for another input (now: another key)");
        // 65,536 tokens still fit uint16.
        t.vocab_size = 65536;
        for (uint32_t& id : ids) id %= 65536;
        t.ids = ids;
        REQUIRE(write_token_cache(path, "the key\n", t).empty());
        const std::optional<TextTokens> narrow = read_token_cache(path, "the key\n", "files", why);
        REQUIRE(narrow->ids.width() == 2);
        REQUIRE(narrow->ids == ids);
    }
    SECTION("a text of 70,000 distinct characters (chars)") {
        std::string text;
        for (uint32_t c = 0x10000; c < 0x10000 + 70000; ++c) append_utf8(text, c);
        text += "\n";
        const std::string path = write_file(dir, "wide.txt", text);
        TempDir cache;
        const TextTokens first = cached({path}, cache);
        const TextTokens again = cached({path}, cache);
        REQUIRE(again.ids.mapped());
        REQUIRE(again.ids.width() == 4);
        REQUIRE(again.vocab_size == 70001);
        REQUIRE(again.ids == first.ids.to_vector());
        REQUIRE(again.vocabulary == first.vocabulary);
        REQUIRE(fs::file_size(cache_file(cache)) > 4 * 70001);
    }
}

TEST_CASE("token cache: a text whose size or modification time changed is tokenized again", "[text][cache]") {
    TempDir dir, cache;
    const std::string path = write_file(dir, "play.txt", play());
    cached({path}, cache);
    const std::string file = cache_file(cache);
    const TokenCacheKey key = token_cache_key({path}, config::Tokenizer::chars, "");
    std::string why;
    REQUIRE(read_token_cache(file, key.text, path, why));

    SECTION("size") {
        write_file(dir, "play.txt", play() + "NURSE:\nAnd thee.\n");
        REQUIRE(token_cache_key({path}, config::Tokenizer::chars, "").name == key.name);  // the same file
        REQUIRE_FALSE(read_token_cache(file, token_cache_key({path}, config::Tokenizer::chars, "").text, path, why));
        REQUIRE(why == fs::weakly_canonical(path).string() + " changed since it was written");
        const ino_t before = inode(file);
        const TextTokens t = cached({path}, cache);
        REQUIRE(inode(file) != before);  // tokenized again and rewritten
        REQUIRE(t.vocabulary.find(U'N') != std::u32string::npos);
        const TextTokens again = cached({path}, cache);  // and rewritten
        REQUIRE(again.ids.mapped());
        REQUIRE(again.ids == read_text({path}, config::Tokenizer::chars).ids.to_vector());
        REQUIRE(cache_file(cache) == file);
    }
    SECTION("modification time alone") {
        fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
        REQUIRE_FALSE(read_token_cache(file, token_cache_key({path}, config::Tokenizer::chars, "").text, path, why));
        const ino_t before = inode(file);
        REQUIRE(cached({path}, cache).ids.mapped());  // tokenized again, rewritten, mapped
        const ino_t rewritten = inode(file);
        REQUIRE(rewritten != before);
        REQUIRE(cached({path}, cache).ids.mapped());  // read as it is
        REQUIRE(inode(file) == rewritten);
    }
    SECTION("another tokenizer or model is another file") {
        REQUIRE(token_cache_key({path}, config::Tokenizer::bytes, "").name != key.name);
        REQUIRE(token_cache_key({path}, config::Tokenizer::sentencepiece, model_identity("a")).name !=
                token_cache_key({path}, config::Tokenizer::sentencepiece, model_identity("b")).name);
    }
}

TEST_CASE("token cache: a short or corrupt file is not used, and is rewritten", "[text][cache]") {
    TempDir dir, cache;
    const std::string path = write_file(dir, "play.txt", play());
    const TextTokens fresh = read_text({path}, config::Tokenizer::chars);
    cached({path}, cache);
    const std::string file = cache_file(cache);
    const auto size = fs::file_size(file);
    const std::string key = token_cache_key({path}, config::Tokenizer::chars, "").text;
    std::string why;

    SECTION("one byte short") {
        fs::resize_file(file, size - 1);
        REQUIRE_FALSE(read_token_cache(file, key, path, why));
        REQUIRE_THAT(why, Catch::StartsWith("not whole (" + std::to_string(size - 1) + " bytes where its header says " +
                                            std::to_string(size) + ")"));
    }
    SECTION("shorter than its header") {
        fs::resize_file(file, 10);
        REQUIRE_FALSE(read_token_cache(file, key, path, why));
        REQUIRE(why == "not whole (10 bytes, less than its header)");
    }
    SECTION("an id changed") {
        std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
        f.seekp(static_cast<std::streamoff>(size - 3));
        f.put('\x7F');
        f.close();
        REQUIRE_FALSE(read_token_cache(file, key, path, why));
        REQUIRE(why == "corrupt (its checksum does not match its bytes)");
    }
    SECTION("not a cache") {
        write_file(cache, fs::path(file).filename().string(), std::string(200, 'x'));
        REQUIRE_FALSE(read_token_cache(file, key, path, why));
        REQUIRE(why == "not a token cache of this version");
    }
    // Tokenized again (the same ids), and the file is whole again.
    const ino_t damaged = inode(file);
    const TextTokens t = cached({path}, cache);
    REQUIRE(inode(file) != damaged);
    REQUIRE(t.ids == fresh.ids.to_vector());
    REQUIRE(fs::file_size(file) == size);
    const TextTokens again = cached({path}, cache);
    REQUIRE(again.ids.mapped());
    REQUIRE(again.ids == fresh.ids.to_vector());
    // No file at all: nothing to say.
    fs::remove(file);
    REQUIRE_FALSE(read_token_cache(file, key, path, why));
    REQUIRE(why.empty());
}

TEST_CASE("token cache: a folder that cannot be written is no error; errors of the text are not cached",
          "[text][cache]") {
    TempDir dir;
    const std::string path = write_file(dir, "play.txt", play());
    const std::string not_a_folder = write_file(dir, "file", "x");
    const TextTokens t = cached_text_tokens({path}, config::Tokenizer::chars, "", nullptr, not_a_folder + "/cache");
    REQUIRE(t.ids == read_text({path}, config::Tokenizer::chars).ids.to_vector());
    TempDir cache;
    const std::string empty = write_file(dir, "empty.txt", "");
    REQUIRE_THROWS_WITH(cached({empty}, cache), empty + ": the text is empty");
    REQUIRE(fs::is_empty(cache.path()));
}

TEST_CASE("token cache: sentencepiece keeps the trained model; it is not trained again", "[text][cache]") {
    TempDir dir, cache;
    std::string text;
    const char* words[] = {"to", "be", "or", "not", "the", "question", "whether", "nobler", "mind", "suffer"};
    for (int line = 0; line < 200; ++line) {
        for (int w = 0; w < 6; ++w) text += std::string(w ? " " : "") + words[(line * 3 + w * 7) % 10];
        text += "\n";
    }
    const std::string path = write_file(dir, "play.txt", text);
    int trained = 0;
    const auto train = [&] {
        ++trained;
        return SentencePieceText::train({path}, 40);
    };
    const std::string identity = "trained from the text, data.vocab_size 40";
    const TextTokens first = cached_text_tokens({path}, config::Tokenizer::sentencepiece, identity, train,
                                                cache.path().string());
    const TextTokens again = cached_text_tokens({path}, config::Tokenizer::sentencepiece, identity, train,
                                                cache.path().string());
    REQUIRE(trained == 1);
    REQUIRE(again.ids.mapped());
    REQUIRE(again.ids == first.ids.to_vector());
    REQUIRE(again.tokenizer_model == first.tokenizer_model);
    REQUIRE(again.vocab_size == 41);
    REQUIRE(vocabulary_metadata(text_windows(again, 8, 0, 1)) == vocabulary_metadata(text_windows(first, 8, 0, 1)));
}

TEST_CASE("token cache: load_splits writes it into $GPUTRAIN_CACHE and reads the same windows from it",
          "[text][cache]") {
    TempDir dir;
    const ScopedCacheDir cache;
    config::DataConfig cfg;
    cfg.path = write_file(dir, "play.txt", play());
    cfg.format = config::DataFormat::text;
    cfg.tokenizer = config::Tokenizer::chars;
    cfg.validation_split = 0.1;
    const DataSplits a = load_splits(cfg, {16}, Need::both);
    REQUIRE(fs::directory_iterator(cache.path()) != fs::directory_iterator());
    const DataSplits b = load_splits(cfg, {16}, Need::both);
    REQUIRE(model_inputs(a.train, 0, a.train.size()) == model_inputs(b.train, 0, b.train.size()));
    REQUIRE(sample_labels(a.train, 0, a.train.size()) == sample_labels(b.train, 0, b.train.size()));
    REQUIRE(model_inputs(a.test, 0, a.test.size()) == model_inputs(b.test, 0, b.test.size()));
    REQUIRE(sample_labels(a.validation, 0, a.validation.size()) == sample_labels(b.validation, 0, b.validation.size()));
    REQUIRE(vocabulary_metadata(a.train) == vocabulary_metadata(b.train));
    REQUIRE(a.train.description == b.train.description);
}

// Not run by default: ./unit_data "[bench]" from the project root, with datasets/shakespeare.
TEST_CASE("token cache: tokenizing vs mapping datasets/shakespeare", "[.][bench]") {
    const std::string path = "datasets/shakespeare/shakespeare.txt";
    if (!fs::exists(path)) {
        WARN("no " + path + ": nothing measured");
        return;
    }
    TempDir cache;
    const auto time = [](auto&& f) {
        double best = 1e9;
        for (int i = 0; i < 5; ++i) {
            const auto start = std::chrono::steady_clock::now();
            f();
            best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        return best;
    };
    for (const auto tokenizer : {config::Tokenizer::bytes, config::Tokenizer::chars}) {
        const TokenCacheKey key = token_cache_key({path}, tokenizer, "");
        const std::string file = (cache.path() / key.name).string();
        const TextTokens fresh = read_text({path}, tokenizer);
        REQUIRE(write_token_cache(file, key.text, fresh).empty());
        std::string why;
        const double tokenize = time([&] { REQUIRE(read_text({path}, tokenizer).ids.size() == fresh.ids.size()); });
        const double map = time([&] { REQUIRE(read_token_cache(file, key.text, path, why)->ids.size() == fresh.ids.size()); });
        const TextTokens mapped = *read_token_cache(file, key.text, path, why);
        const int64_t windows = window_count(fresh, 256);
        const double windows_held = time([&] { text_windows(fresh, 256, 0, windows); });
        const double windows_mapped = time([&] { text_windows(mapped, 256, 0, windows); });
        WARN(fmt::format("{}: {} tokens: tokenize {:.1f} ms, map and check the cache {:.1f} ms ({} bytes); "
                         "text_windows from held ids {:.1f} ms, from mapped ids {:.1f} ms",
                         config::name_of(tokenizer), fresh.ids.size(), tokenize * 1e3, map * 1e3, fs::file_size(file),
                         windows_held * 1e3, windows_mapped * 1e3));
    }
}

TEST_CASE("token cache: a folder with the cache file's name is neither read nor written over", "[text][cache]") {
    TempDir dir;
    const std::string path = dir / "folder.tokens";
    fs::create_directories(path);
    std::string why;
    REQUIRE_FALSE(read_token_cache(path, "the key\n", "files", why));
    REQUIRE(why == "is a folder, not a file");
    TextTokens t;
    t.tokenizer = config::Tokenizer::bytes;
    t.vocab_size = 256;
    t.ids = std::vector<uint32_t>{1, 2, 3};
    const std::string failed = write_token_cache(path, "the key\n", t);
    REQUIRE_THAT(failed, Catch::StartsWith("cannot rename "));
    REQUIRE(fs::is_directory(path));
    // No temporary file is left beside it.
    size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
    REQUIRE(entries == 1);
}
