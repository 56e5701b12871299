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
#include "data/token_ids.hpp"

namespace gputrain::data {

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
// window_count is (ids - 1) / positions. The data set is a view of `ids`
// (tokens.ids, shared by the splits), or of a copy of tokens.ids (cheap for
// mapped ids).
int64_t window_count(const TextTokens& tokens, int64_t positions);
Dataset text_windows(const TextTokens& tokens, std::shared_ptr<const TokenIds> ids, int64_t positions,
                     int64_t begin, int64_t end);
Dataset text_windows(const TextTokens& tokens, int64_t positions, int64_t begin, int64_t end);
// The ids of `d`'s windows (from its first window's first id to its last
// window's last label) cut into windows every `stride` ids instead
// (data.sequence_stride): window j starts at id first_token + j * stride.
Dataset windows_every(Dataset d, int64_t stride);

// The characters of a chars vocabulary as UTF-8, and back (checkpoint metadata).
std::string vocabulary_utf8(const std::u32string& vocabulary);
std::u32string vocabulary_from_utf8(const std::string& text);

}  // namespace gputrain::data
