#include "data/sentencepiece_text.hpp"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gputrain::data {

SentencePieceText::SentencePieceText(const std::string& serialized, const std::string& what)
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
    const auto status = sp_->LoadFromSerializedProto(serialized);
    if (!status.ok())
        throw DataError(what + ": not a SentencePiece model (" + status.ToString() +
                        "); give a .model file written by spm_train or SentencePieceTrainer");
}

SentencePieceText::~SentencePieceText() = default;

std::string SentencePieceText::train(const std::vector<std::string>& files, int64_t vocab_size) {
    std::string inputs;
    for (const std::string& f : files) inputs += (inputs.empty() ? "" : ",") + f;
    // Identity normalization and every space kept, so that decoding gives the
    // text back; one thread, so that the same text gives the same model.
    const std::string args = fmt::format(
        "--input={} --vocab_size={} --model_type=unigram --character_coverage=1.0 "
        "--normalization_rule_name=identity --remove_extra_whitespaces=false --add_dummy_prefix=false --num_threads=1 "
        "--input_sentence_size=2000000 --shuffle_input_sentence=false --minloglevel=2",
        inputs, vocab_size);
    std::string serialized;
    // The trainer logs its command line to stderr whatever --minloglevel says
    // (before it reads it): quiet for the call; its status says what failed.
    std::fflush(stderr);
    const int saved = dup(STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved >= 0 && null >= 0) dup2(null, STDERR_FILENO);
    const auto status = sentencepiece::SentencePieceTrainer::Train(args, nullptr, &serialized);
    if (saved >= 0 && null >= 0) dup2(saved, STDERR_FILENO);
    if (saved >= 0) close(saved);
    if (null >= 0) close(null);
    if (!status.ok())
        throw DataError(fmt::format("data.vocab_size {}: SentencePiece could not train a model on {}: {}", vocab_size,
                                    files.size() == 1 ? files[0] : std::to_string(files.size()) + " files",
                                    status.ToString()));
    return serialized;
}

int64_t SentencePieceText::vocab_size() const { return sp_->GetPieceSize() + 1; }

std::vector<uint32_t> SentencePieceText::encode(const std::string& text) const {
    std::vector<uint32_t> out;
    std::vector<int> ids;
    size_t begin = 0;
    while (begin <= text.size()) {
        const size_t end = std::min(text.find('\n', begin), text.size());
        ids.clear();
        if (end > begin) {
            const auto status = sp_->Encode(std::string_view(text).substr(begin, end - begin), &ids);
            if (!status.ok()) throw DataError("SentencePiece could not encode the text: " + status.ToString());
        }
        for (int id : ids) out.push_back(static_cast<uint32_t>(id));
        if (end == text.size()) break;
        out.push_back(static_cast<uint32_t>(newline_id()));
        begin = end + 1;
    }
    return out;
}

std::string SentencePieceText::piece_text(int64_t id) const {
    if (id == newline_id()) return "\n";
    std::string piece = sp_->IdToPiece(static_cast<int>(id));
    std::string out;
    const std::string space = "\xE2\x96\x81";  // U+2581, SentencePiece's word boundary
    for (size_t i = 0; i < piece.size();) {
        if (piece.compare(i, space.size(), space) == 0) {
            out += ' ';
            i += space.size();
        } else {
            out += piece[i++];
        }
    }
    return out;
}

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64_encode(const std::string& bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t n = std::min<size_t>(3, bytes.size() - i);
        uint32_t v = 0;
        for (size_t j = 0; j < 3; ++j) v = (v << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0u);
        for (size_t j = 0; j < 4; ++j) out += j <= n ? kAlphabet[(v >> (18 - 6 * j)) & 63] : '=';
    }
    return out;
}

bool base64_decode(const std::string& text, std::string& bytes) {
    if (text.size() % 4 != 0) return false;
    bytes.clear();
    for (size_t i = 0; i < text.size(); i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (size_t j = 0; j < 4; ++j) {
            const char c = text[i + j];
            int d;
            if (c == '=' && i + 4 == text.size() && j >= 2) {
                d = 0;
                ++pad;
            } else {
                const char* p = std::char_traits<char>::find(kAlphabet, 64, c);
                if (!p || pad) return false;
                d = static_cast<int>(p - kAlphabet);
            }
            v = (v << 6) | static_cast<uint32_t>(d);
        }
        for (int j = 0; j < 3 - pad; ++j) bytes += static_cast<char>((v >> (16 - 8 * j)) & 255);
    }
    return true;
}

}  // namespace gputrain::data
