// format: text: UTF-8 text files turned into token ids (data.tokenizer) and
// cut into samples of model.input_shape[0] positions.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "data/dataset.hpp"

namespace gputrain::data {

// The token ids of a text: held in memory (as tokenizing makes them), or a
// view of a memory-mapped token cache (data/token_cache.hpp) of uint16 or
// uint32 ids, read widened to uint32; `owner` keeps the mapping alive.
class TokenIds {
public:
    TokenIds() = default;
    TokenIds(std::vector<uint32_t> ids) : held_(std::move(ids)) {}  // NOLINT: implicit, as a vector was
    TokenIds(std::shared_ptr<const void> owner, std::span<const uint16_t> ids)
        : owner_(std::move(owner)), ids16_(ids), width_(2) {}
    TokenIds(std::shared_ptr<const void> owner, std::span<const uint32_t> ids)
        : owner_(std::move(owner)), ids32_(ids), width_(4) {}

    size_t size() const { return owner_ ? (width_ == 2 ? ids16_.size() : ids32_.size()) : held_.size(); }
    bool empty() const { return size() == 0; }
    uint32_t operator[](size_t i) const { return owner_ ? (width_ == 2 ? ids16_[i] : ids32_[i]) : held_[i]; }
    bool mapped() const { return owner_ != nullptr; }
    int width() const { return width_; }  // bytes per id where they are: 2 or 4
    // f(std::span<const uint16_t>) or f(std::span<const uint32_t>): every id, as stored.
    template <class F>
    decltype(auto) visit(F&& f) const {
        if (owner_ && width_ == 2) return f(ids16_);
        return f(owner_ ? ids32_ : std::span<const uint32_t>(held_));
    }
    // Held ids only grow: a view is copied into memory first.
    void push_back(uint32_t id) { hold().push_back(id); }
    void append(const std::vector<uint32_t>& ids) {
        std::vector<uint32_t>& held = hold();
        held.insert(held.end(), ids.begin(), ids.end());
    }
    void reserve(size_t n) { hold().reserve(n); }
    std::vector<uint32_t> to_vector() const {
        return visit([](auto ids) { return std::vector<uint32_t>(ids.begin(), ids.end()); });
    }
    bool operator==(const std::vector<uint32_t>& other) const { return to_vector() == other; }

private:
    std::vector<uint32_t>& hold() {
        if (owner_) {
            held_ = to_vector();
            owner_.reset();
            width_ = 4;
        }
        return held_;
    }
    std::vector<uint32_t> held_;
    std::shared_ptr<const void> owner_;  // the mapping of a view
    std::span<const uint16_t> ids16_;
    std::span<const uint32_t> ids32_;
    int width_ = 4;
};

struct TextTokens {
    TokenIds ids;
    config::Tokenizer tokenizer = config::Tokenizer::chars;
    std::u32string vocabulary;   // chars: the character of each id; bytes: empty
    std::string tokenizer_model; // sentencepiece: the model's bytes
    int64_t vocab_size = 0;      // 256 for bytes
    std::string files;           // what was read, for descriptions
};

// The text files of data.path (a file, or every *.txt of a folder in name
// order, joined with nothing between them). DataError when there is none.
std::vector<std::string> text_files(const std::string& path);

// How `files` are named in descriptions: the file, or "N files, FIRST ...".
std::string files_description(const std::vector<std::string>& files);

// Reads and tokenizes `files`. chars: the vocabulary is the distinct
// characters (Unicode code points) of all of them, sorted; a text that is not
// UTF-8 is a DataError naming the file and the byte offset. Empty text: DataError.
// sentencepiece: `model` holds the model's bytes (SentencePieceText).
TextTokens read_text(const std::vector<std::string>& files, config::Tokenizer tokenizer, const std::string& model = "");

// The metadata "vocabulary" a checkpoint of `d` stores: chars: its characters
// (UTF-8); sentencepiece: its model's bytes in base64; bytes: "".
std::string vocabulary_metadata(const Dataset& d);

// Windows w in [begin, end) of `positions` tokens: window w's inputs are ids
// [w * positions, (w + 1) * positions) and its labels the ids one further on.
// window_count is (ids - 1) / positions.
int64_t window_count(const TextTokens& tokens, int64_t positions);
Dataset text_windows(const TextTokens& tokens, int64_t positions, int64_t begin, int64_t end);

// The characters of a chars vocabulary as UTF-8, and back (checkpoint metadata).
std::string vocabulary_utf8(const std::u32string& vocabulary);
std::u32string vocabulary_from_utf8(const std::string& text);

}  // namespace gputrain::data
