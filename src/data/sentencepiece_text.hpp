// data.tokenizer: sentencepiece: Debian's libsentencepiece turns text into
// subword ids, with a model loaded from a .model file (data.tokenizer_model)
// or trained from the training text (data.vocab_size). SentencePiece reads
// text line by line and drops the line breaks, which a play's text needs:
// each line is encoded on its own, and one id past the model's pieces stands
// for the line break between lines.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace gputrain::data {

class SentencePieceText {
public:
    // `serialized`: a model's bytes (a .model file). DataError naming `what` when they are not one.
    SentencePieceText(const std::string& serialized, const std::string& what);
    ~SentencePieceText();
    SentencePieceText(const SentencePieceText&) = delete;
    SentencePieceText& operator=(const SentencePieceText&) = delete;

    // Trains a unigram model of `vocab_size` pieces on `files` (identity
    // normalization, whitespace kept; deterministic: one thread), returns its bytes.
    static std::string train(const std::vector<std::string>& files, int64_t vocab_size);

    // The model's pieces and the line-break id after them.
    int64_t vocab_size() const;
    int64_t newline_id() const { return vocab_size() - 1; }
    // Ids of `text` (line by line, the line-break id between lines).
    std::vector<uint32_t> encode(const std::string& text) const;
    // The text of one id, as it reads in a stream of them (U+2581 as a space).
    std::string piece_text(int64_t id) const;

private:
    std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

// Base64 (RFC 4648, with padding) for a model's bytes in checkpoint metadata.
std::string base64_encode(const std::string& bytes);
bool base64_decode(const std::string& text, std::string& bytes);

}  // namespace gputrain::data
