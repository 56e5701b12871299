#include "data/text_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/utf8.hpp"
#include "data/sentencepiece_text.hpp"

namespace gputrain::data {

std::vector<std::string> text_files(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return {path};
    if (!std::filesystem::is_directory(path, ec)) throw DataError(path + ": no such file or directory");
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec))
        if (entry.is_regular_file(ec) && entry.path().extension() == ".txt") files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty())
        throw DataError(path + ": no .txt files (format text reads a text file, or every .txt file of a folder)");
    return files;
}

namespace {

std::string read_file(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw DataError(file + ": cannot be read");
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The code point of the well-formed sequence of `n` bytes at text[pos].
uint32_t decode(const std::string& text, size_t pos, size_t n) {
    const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(text[pos + i])); };
    if (n == 1) return b(0);
    if (n == 2) return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    if (n == 3) return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

}  // namespace

std::u32string vocabulary_from_utf8(const std::string& text) {
    std::u32string out;
    for (size_t pos = 0; pos < text.size();) {
        const size_t n = utf8_sequence_length(text, pos);
        if (n == 0) return {};
        out.push_back(decode(text, pos, n));
        pos += n;
    }
    return out;
}

std::string vocabulary_utf8(const std::u32string& vocabulary) {
    std::string out;
    for (char32_t c : vocabulary) append_utf8(out, static_cast<uint32_t>(c));
    return out;
}

std::string vocabulary_metadata(const Dataset& d) {
    if (d.tokenizer == config::Tokenizer::sentencepiece) return base64_encode(d.tokenizer_model);
    return vocabulary_utf8(d.vocabulary);
}

std::string files_description(const std::vector<std::string>& files) {
    if (files.empty()) return "";
    return files.size() == 1 ? files[0] : fmt::format("{} files, {} ...", files.size(), files[0]);
}

TextTokens read_text(const std::vector<std::string>& files, config::Tokenizer tokenizer, const std::string& model) {
    TextTokens out;
    out.tokenizer = tokenizer;
    if (tokenizer == config::Tokenizer::sentencepiece) {
        const SentencePieceText pieces(model, "data.tokenizer_model");
        out.tokenizer_model = model;
        out.vocab_size = pieces.vocab_size();
        out.files = files_description(files);
        for (const std::string& file : files) out.ids.append(pieces.encode(read_file(file)));
        if (out.ids.empty()) throw DataError(out.files + ": the text is empty");
        return out;
    }
    out.files = files_description(files);
    std::u32string points;  // chars: every character, then mapped to ids
    for (const std::string& file : files) {
        const std::string text = read_file(file);
        if (tokenizer == config::Tokenizer::bytes) {
            for (char c : text) out.ids.push_back(static_cast<unsigned char>(c));
            continue;
        }
        for (size_t pos = 0; pos < text.size();) {
            const size_t n = utf8_sequence_length(text, pos);
            if (n == 0)
                throw DataError(fmt::format("{}: byte offset {} (0x{:02X}) is not UTF-8; data.tokenizer chars reads "
                                            "UTF-8 text: convert the file (iconv -t UTF-8) or use tokenizer: bytes",
                                            file, pos, static_cast<unsigned char>(text[pos])));
            points.push_back(decode(text, pos, n));
            pos += n;
        }
    }
    if (tokenizer == config::Tokenizer::bytes) {
        out.vocab_size = 256;
    } else {
        // Ids by code point, in one pass each way (no sort of the whole text).
        std::vector<int32_t> id_of(0x110000, -1);
        for (char32_t c : points) id_of[c] = 0;
        for (char32_t c = 0; c < 0x110000; ++c)
            if (id_of[c] == 0) {
                id_of[c] = static_cast<int32_t>(out.vocabulary.size()) + 1;  // 1-based while marking
                out.vocabulary.push_back(c);
            }
        out.vocab_size = static_cast<int64_t>(out.vocabulary.size());
        out.ids.reserve(points.size());
        for (char32_t c : points) out.ids.push_back(static_cast<uint32_t>(id_of[c] - 1));
    }
    if (out.ids.empty()) throw DataError(out.files + ": the text is empty");
    return out;
}

int64_t window_count(const TextTokens& tokens, int64_t positions) {
    return (static_cast<int64_t>(tokens.ids.size()) - 1) / positions;
}

Dataset text_windows(const TextTokens& tokens, std::shared_ptr<const TokenIds> ids, int64_t positions,
                     int64_t begin, int64_t end) {
    Dataset d;
    d.text = true;
    d.tokenizer = tokens.tokenizer;
    d.vocabulary = tokens.vocabulary;
    d.tokenizer_model = tokens.tokenizer_model;
    d.sample_shape = {positions};
    d.num_classes = tokens.vocab_size;
    d.type = SampleType::token;
    d.label_width = static_cast<int>(positions);
    d.tokens = std::move(ids);
    d.first_token = begin * positions;
    d.window_stride = positions;
    d.windows = std::max<int64_t>(0, end - begin);
    return d;
}

Dataset windows_every(Dataset d, int64_t stride) {
    if (d.windows > 0) d.windows = (d.window_start(d.windows - 1) - d.first_token) / stride + 1;
    d.window_stride = stride;
    return d;
}

Dataset text_windows(const TextTokens& tokens, int64_t positions, int64_t begin, int64_t end) {
    return text_windows(tokens, std::make_shared<const TokenIds>(tokens.ids), positions, begin, end);
}

}  // namespace gputrain::data
