// format: text: tokenizers, windows and their next-token labels, the
// validation and test windows, and the errors of bad text.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include "core/error.hpp"
#include "data/dataset.hpp"
#include "data/sentencepiece_text.hpp"
#include "data/text_reader.hpp"
#include "data_test_files.hpp"

using namespace gputrain;
using namespace gputrain::data;
using namespace data_test;

namespace {

std::string write_text(const TempDir& dir, const std::string& name, const std::string& text) {
    const std::string path = dir / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

config::DataConfig text_config(const std::string& path, config::Tokenizer tokenizer = config::Tokenizer::chars) {
    config::DataConfig cfg;
    cfg.path = path;
    cfg.format = config::DataFormat::text;
    cfg.tokenizer = tokenizer;
    return cfg;
}

}  // namespace

TEST_CASE("chars: the vocabulary is the text's characters sorted by code point", "[text]") {
    TempDir dir;
    // "é" is two bytes of UTF-8 and one character.
    const TextTokens t = read_text({write_text(dir, "a.txt", "baé\nab")}, config::Tokenizer::chars);
    REQUIRE(t.vocabulary == U"\nabé");
    REQUIRE(t.vocab_size == 4);
    REQUIRE(t.ids == std::vector<uint32_t>{2, 1, 3, 0, 1, 2});
    REQUIRE(vocabulary_from_utf8(vocabulary_utf8(t.vocabulary)) == t.vocabulary);
}

TEST_CASE("bytes: every byte is its own id of 256", "[text]") {
    TempDir dir;
    const TextTokens t = read_text({write_text(dir, "a.txt", "A\xC3\xA9")}, config::Tokenizer::bytes);
    REQUIRE(t.vocab_size == 256);
    REQUIRE(t.ids == std::vector<uint32_t>{65, 0xC3, 0xA9});
}

TEST_CASE("windows are cut every `positions` tokens, labelled with the next token", "[text]") {
    TempDir dir;
    const TextTokens t = read_text({write_text(dir, "a.txt", "abcdefghij")}, config::Tokenizer::chars);
    // 10 tokens: (10 - 1) / 3 = 3 windows; the last token is only a label.
    REQUIRE(window_count(t, 3) == 3);
    const Dataset d = text_windows(t, 3, 1, 3);
    REQUIRE(d.size() == 2);
    REQUIRE(d.label_width == 3);
    REQUIRE(d.sample_shape == Shape{3});
    REQUIRE(model_inputs(d, 0, 2) == std::vector<float>{3, 4, 5, 6, 7, 8});
    REQUIRE(sample_labels(d, 0, 2) == std::vector<int32_t>{4, 5, 6, 7, 8, 9});
    REQUIRE(sample_labels(d, 1, 2) == std::vector<int32_t>{7, 8, 9});
    // A view of the ids, nothing copied: rows as stored are the window and
    // its last label (uint32 as tokenizing holds them), overlapping by one.
    REQUIRE(d.type == SampleType::token);
    REQUIRE(d.row(0) == static_cast<const uint32_t*>(d.tokens->data()) + 3);
    REQUIRE(d.row_bytes() == 4 * sizeof(uint32_t));
    std::vector<uint32_t> rows(8);
    d.read_rows(0, 2, rows.data());
    REQUIRE(rows == std::vector<uint32_t>{3, 4, 5, 6, 6, 7, 8, 9});
}

TEST_CASE("load_splits holds out the last windows for validation and evaluates on them", "[text]") {
    const ScopedCacheDir cache;
    TempDir dir;
    std::string text;
    for (int i = 0; i < 41; ++i) text += static_cast<char>('a' + i % 7);
    const std::string path = write_text(dir, "t.txt", text);
    config::DataConfig cfg = text_config(path);
    cfg.validation_split = 0.25;
    // 41 tokens, 4 positions: 10 windows; Keras' split keeps int(10 * 0.75) = 7 for training.
    const DataSplits s = load_splits(cfg, {4}, Need::both);
    REQUIRE(s.train.size() == 7);
    REQUIRE(s.validation.size() == 3);
    REQUIRE(s.test.size() == 3);
    REQUIRE(model_inputs(s.test, 0, s.test.size()) == model_inputs(s.validation, 0, s.validation.size()));
    REQUIRE(sample_labels(s.test, 0, s.test.size()) == sample_labels(s.validation, 0, s.validation.size()));
    // The splits are windows of one copy of the ids.
    REQUIRE(s.train.tokens == s.validation.tokens);
    REQUIRE(s.validation.first_token == 7 * 4);
    REQUIRE(s.train.num_classes == 7);
    REQUIRE(s.validation.text);
    REQUIRE(model_inputs(s.validation, 0, 1).front() == static_cast<float>((7 * 4) % 7));
    REQUIRE(sample_labels(s.train, 6, 7).back() == (7 * 4) % 7);  // the last training label is validation's first id
}

TEST_CASE("data.sequence_stride cuts the training part into windows every S tokens, never into validation's", "[text]") {
    const ScopedCacheDir cache;
    TempDir dir;
    std::string text;
    for (int i = 0; i < 41; ++i) text += static_cast<char>('a' + i % 7);  // token t has id t % 7
    config::DataConfig cfg = text_config(write_text(dir, "t.txt", text));
    cfg.validation_split = 0.25;  // 10 windows of 4: training tokens 0..28 (28: the last label), validation from 28
    for (const int64_t stride : {1, 3, 4, 6}) {
        INFO("sequence_stride " << stride);
        cfg.sequence_stride = stride;
        const DataSplits s = load_splits(cfg, {4}, Need::both);
        // Windows start at 0, S, 2S, ... while their last label is at most token 28.
        const int64_t count = (28 - 4) / stride + 1;
        REQUIRE(s.train.size() == count);
        REQUIRE(s.train.window_stride == stride);
        for (int64_t w = 0; w < count; ++w) {
            std::vector<float> inputs;
            std::vector<int32_t> labels;
            for (int64_t t = 0; t < 4; ++t) {
                inputs.push_back(static_cast<float>((w * stride + t) % 7));
                labels.push_back(static_cast<int32_t>((w * stride + t + 1) % 7));
            }
            REQUIRE(model_inputs(s.train, w, w + 1) == inputs);
            REQUIRE(sample_labels(s.train, w, w + 1) == labels);
        }
        REQUIRE(s.train.window_start(count - 1) + 4 <= 28);
        // The held-out windows are the same whatever the stride.
        REQUIRE(s.validation.size() == 3);
        REQUIRE(s.validation.first_token == 28);
        REQUIRE(s.validation.window_stride == 4);
        REQUIRE(s.test.first_token == 28);
        // Rows as copied: the window's ids and its last label.
        // (the first load tokenizes: uint32 held; the later ones map the cache's uint16)
        std::vector<uint8_t> row(s.train.row_bytes());
        REQUIRE(row.size() == 5u * static_cast<size_t>(s.train.tokens->width()));
        s.train.read_rows(count - 1, 1, row.data());
        for (int64_t t = 0; t < 5; ++t) {
            const uint32_t id = s.train.tokens->width() == 2 ? reinterpret_cast<const uint16_t*>(row.data())[t]
                                                             : reinterpret_cast<const uint32_t*>(row.data())[t];
            REQUIRE(id == static_cast<uint32_t>(((count - 1) * stride + t) % 7));
        }
    }
    // Without validation every window of the text: 41 tokens, the last label at most token 40.
    cfg.validation_split = 0;
    cfg.sequence_stride = 1;
    REQUIRE(load_splits(cfg, {4}, Need::train).train.size() == 10 * 4 - 4 + 1);
}

TEST_CASE("a folder's .txt files are read in name order", "[text]") {
    TempDir dir;
    write_text(dir, "2.txt", "cd");
    write_text(dir, "1.txt", "ab");
    write_text(dir, "notes.md", "zz");
    REQUIRE(text_files(dir.path().string()) == std::vector<std::string>{dir / "1.txt", dir / "2.txt"});
    const TextTokens t = read_text(text_files(dir.path().string()), config::Tokenizer::chars);
    REQUIRE(t.ids == std::vector<uint32_t>{0, 1, 2, 3});
}

TEST_CASE("bad text: not UTF-8, empty, shorter than a block, no test split", "[text]") {
    const ScopedCacheDir cache;
    TempDir dir;
    const std::string latin1 = write_text(dir, "latin1.txt", "caf\xE9!");
    REQUIRE_THROWS_WITH(read_text({latin1}, config::Tokenizer::chars),
                        latin1 + ": byte offset 3 (0xE9) is not UTF-8; data.tokenizer chars reads UTF-8 text: convert "
                                 "the file (iconv -t UTF-8) or use tokenizer: bytes");
    REQUIRE(read_text({latin1}, config::Tokenizer::bytes).ids.size() == 5);
    const std::string empty = write_text(dir, "empty.txt", "");
    REQUIRE_THROWS_WITH(read_text({empty}, config::Tokenizer::chars), empty + ": the text is empty");
    const std::string tiny = write_text(dir, "tiny.txt", "abcd");
    REQUIRE_THROWS_WITH(load_splits(text_config(tiny), {4}, Need::train),
                        tiny + ": 4 tokens make no sample of 4 positions (and the label of the last); give a longer "
                               "text or a smaller model.input_shape");
    REQUIRE_THROWS_AS(load_splits(text_config(tiny), {2, 2}, Need::train), ConfigError);
    REQUIRE_THROWS_WITH(load_splits(text_config(tiny), {2}, Need::test),
                        "format text: evaluate reads the last data.validation_split of the text's windows, and "
                        "data.validation_split is 0; set it (e.g. 0.1) as training did");
    TempDir nothing;
    REQUIRE_THROWS_WITH(text_files(nothing.path().string()),
                        nothing.path().string() + ": no .txt files (format text reads a text file, or every .txt "
                                                  "file of a folder)");
}

TEST_CASE("sentencepiece: a model trained on the text gives its text back, line breaks included", "[text]") {
    const ScopedCacheDir cache;
    TempDir dir;
    std::string text;
    const char* words[] = {"to", "be", "or", "not", "the", "question", "whether", "nobler", "mind", "suffer"};
    for (int line = 0; line < 400; ++line) {
        text += line % 7 == 0 ? "HAMLET.\n" : "";
        for (int w = 0; w < 6; ++w) text += std::string(w ? " " : "") + words[(line * 3 + w * 7) % 10];
        text += "\n";
    }
    const std::string path = write_text(dir, "play.txt", text);
    const std::string model = SentencePieceText::train({path}, 40);
    const SentencePieceText pieces(model, "test");
    REQUIRE(pieces.vocab_size() == 41);  // 40 pieces and the line break
    const TextTokens t = read_text({path}, config::Tokenizer::sentencepiece, model);
    REQUIRE(t.vocab_size == 41);
    REQUIRE(t.ids.size() < text.size() / 2);  // subwords: fewer ids than characters
    std::string back;
    const std::vector<uint32_t> ids = t.ids.to_vector();
    for (uint32_t id : ids) back += pieces.piece_text(id);
    REQUIRE(back == text);
    REQUIRE(std::count(ids.begin(), ids.end(), 40u) == std::count(text.begin(), text.end(), '\n'));
    // The same text and size train the same model (one thread).
    REQUIRE(SentencePieceText::train({path}, 40) == model);
    // Through load_splits, with data.vocab_size.
    config::DataConfig cfg = text_config(path, config::Tokenizer::sentencepiece);
    cfg.vocab_size = 40;
    const DataSplits s = load_splits(cfg, {8}, Need::train);
    REQUIRE(s.train.num_classes == 41);
    REQUIRE(s.train.tokenizer_model == model);
    REQUIRE(vocabulary_metadata(s.train) == base64_encode(model));
}

TEST_CASE("sentencepiece: a file that is no model is a DataError; base64 round-trips", "[text]") {
    REQUIRE_THROWS_WITH(SentencePieceText("not a model", "m.model"),
                        Catch::Contains("m.model: not a SentencePiece model (") &&
                            Catch::Contains("); give a .model file written by spm_train or SentencePieceTrainer"));
    std::string bytes;
    for (int i = 0; i < 300; ++i) bytes += static_cast<char>((i * 37) & 255);
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{299}, size_t{300}}) {
        std::string back;
        REQUIRE(base64_decode(base64_encode(bytes.substr(0, n)), back));
        REQUIRE(back == bytes.substr(0, n));
    }
    REQUIRE(base64_encode("Man") == "TWFu");
    REQUIRE(base64_encode("Ma") == "TWE=");
    std::string out;
    REQUIRE_FALSE(base64_decode("TWF", out));
    REQUIRE_FALSE(base64_decode("T!Fu", out));
}
