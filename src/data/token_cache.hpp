// format: text: the token cache. A text's token ids are written once, after
// tokenizing, into a file of the cache folder (default_cache_dir():
// $GPUTRAIN_CACHE, else $XDG_CACHE_HOME/gputrain, else ~/.cache/gputrain),
// uint16 when the vocabulary has at most 65,536 tokens, else uint32; later
// runs memory-map it and read the ids in place (TokenIds' view).
//
// The file: a 64-byte header (magic "GTTOKC1\n", version, bytes per id, id
// count, tokenizer, vocabulary size, the lengths of the key and of the
// vocabulary, a checksum of everything after the header), the key (text:
// the tokenizer, each file's absolute path, size and modification time, the
// SentencePiece model's hash or the vocab_size it is trained with), the
// vocabulary (chars: its characters in UTF-8; sentencepiece: the model's
// bytes; bytes: none), zero bytes up to a multiple of 8, then the ids. It is
// written to a temporary file renamed into place; a file that is short, of
// another version, fails its checksum or has another key is not used: the
// text is tokenized again and the file rewritten.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "data/text_reader.hpp"

namespace gputrain::data {

struct TokenCacheKey {
    std::string name;  // the file's name: what stays when the text changes (tokenizer, paths, model)
    std::string text;  // the whole key, stored in the file and compared with it
};

// `model_identity`: sentencepiece: model_identity(bytes) of a given model, or
// what a trained one is trained with; "" for bytes and chars.
TokenCacheKey token_cache_key(const std::vector<std::string>& files, config::Tokenizer tokenizer,
                              const std::string& model_identity);
std::string model_identity(const std::string& model_bytes);

// Writes `tokens` to `path` (temporary file, then rename). "" when it is in
// place, else why not (the folder cannot be made, the disk is full...).
std::string write_token_cache(const std::string& path, const std::string& key, const TextTokens& tokens);

// The tokens of the cache at `path`, their ids mapped, when it is whole and
// holds `key`. Otherwise nullopt, and `why` says why it is not used ("" when
// there is no file). `files` is the tokens' description (TextTokens::files).
std::optional<TextTokens> read_token_cache(const std::string& path, const std::string& key,
                                           const std::string& files, std::string& why);

// The tokens of `files`: from the cache in `cache_dir` when it holds them,
// else read_text(files, tokenizer, model()) and cached (a cache that cannot
// be written is a warning). `model` is called only when the text is
// tokenized (sentencepiece: it reads or trains the model). One info line
// says which was done.
TextTokens cached_text_tokens(const std::vector<std::string>& files, config::Tokenizer tokenizer,
                              const std::string& model_identity, const std::function<std::string()>& model,
                              const std::string& cache_dir);

}  // namespace gputrain::data
