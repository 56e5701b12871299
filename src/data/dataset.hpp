// Dataset: samples held in host memory in their file's type: bytes (images)
// stay bytes, turned into the model's floats per batch (ops::PrepareInputs)
// through a per-channel table that applies data.scale and data.normalize;
// float samples are scaled and normalized when read.
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "core/shape.hpp"
#include "data/token_ids.hpp"

namespace gputrain::data {

// Which part of the training set a worker holds with data.shard_files: part
// `index` of `count` (worker rank and number of workers), the consecutive
// samples part_of(whole, index, count) of the `whole` training samples.
// count == 1: the Dataset is the whole set.
struct DatasetPart {
    int index = 0;
    int count = 1;
    int64_t whole = 0;
};

// How a data set stores its samples: floats, bytes (images), or token ids
// (format: text: windows of a text's ids, uint16 or uint32 as TokenIds holds them).
enum class SampleType { f32, u8, token };

// data.stream: rows of bytes read from a file when they are needed (pread),
// so that the samples never sit in memory; `offset` is where row 0 starts.
// Shared by the splits cut from one file; closes it with the last of them.
struct FileRows {
    std::string path;
    int fd = -1;
    int64_t offset = 0;
    FileRows(std::string file, int64_t data_offset);  // DataError when it cannot be opened
    ~FileRows();
    FileRows(const FileRows&) = delete;
    FileRows& operator=(const FileRows&) = delete;
};

struct Dataset {
    Shape sample_shape;            // e.g. {28, 28}; size() * shape_elements(sample_shape) values
    int64_t num_classes = 0;       // labels are in [0, num_classes)
    SampleType type = SampleType::f32;
    // f32: row-major, one sample after another, scaled by data.scale and normalized.
    std::vector<float> inputs;
    // u8: the file's bytes, row-major; byte v of channel c stands for table[c * 256 + v].
    std::vector<uint8_t> pixels;
    // u8: channels x 256 values; f32: `channels` values, what a black pixel (0) became
    // (the fill of augmentation's padding). Made by data::make_table.
    std::vector<float> table;
    int channels = 1;              // the last axis of a [H, W, C] sample shape, else 1
    // data.stream: the samples (bytes) stay in this file; `pixels` is empty
    // and sample i is the file's row file_first + i. Read them with read_rows.
    std::shared_ptr<const FileRows> file;
    int64_t file_first = 0;
    // label_width 32-bit values per sample: class indices (int32), or with
    // real_targets the bits of float targets (regression: data.target_columns,
    // a float labels array), which every copy moves as they are and the loss
    // reads as floats (target()).
    std::vector<int32_t> labels;
    int label_width = 1;
    bool real_targets = false;
    std::vector<std::string> target_names;  // real targets from a CSV with a header: their columns' names
    std::vector<std::string> columns;       // a CSV's header line (empty without one): the file's layout
    std::vector<std::string> class_names;   // image folders: class i's folder name; empty where unnamed
    // format: text (type token): `windows` windows of the shared `tokens`,
    // window i the ids [first_token + i * window_stride, ... + T] (T =
    // positions, and one more id: the label of the last position). Nothing is copied: the
    // labels (label_width = T, `labels` empty) are the ids one further on,
    // and the model's inputs the ids as floats, made per batch
    // (ops::PrepareInputs). `vocabulary` holds, with the chars tokenizer, the
    // character of each id in id order.
    bool text = false;
    std::shared_ptr<const TokenIds> tokens;
    int64_t first_token = 0;
    int64_t window_stride = 1;  // ids from one window to the next: T, or data.sequence_stride
    int64_t windows = 0;
    // The first id of window i.
    int64_t window_start(int64_t i) const { return first_token + i * window_stride; }
    config::Tokenizer tokenizer = config::Tokenizer::chars;
    std::u32string vocabulary;
    std::string tokenizer_model;  // sentencepiece: the model's bytes
    std::string description;       // "fashion-mnist train (/usr/share/datasets/fashion-mnist)"
    DatasetPart part;              // the training set of a worker with data.shard_files

    int64_t size() const {
        return type == SampleType::token ? windows : static_cast<int64_t>(labels.size()) / label_width;
    }
    // Target j of sample i (real_targets).
    float target(int64_t i, int j) const {
        return std::bit_cast<float>(labels[static_cast<size_t>(i * label_width + j)]);
    }
    int64_t sample_elements() const { return shape_elements(sample_shape); }
    size_t element_bytes() const {
        return type == SampleType::u8      ? 1
               : type == SampleType::token ? static_cast<size_t>(tokens->width())
                                           : sizeof(float);
    }
    // The values of a row as stored: a sample's, and for token windows one id more (the last label).
    int64_t stored_elements() const { return sample_elements() + (type == SampleType::token ? 1 : 0); }
    size_t row_bytes() const { return static_cast<size_t>(stored_elements()) * element_bytes(); }
    bool streamed() const { return file != nullptr; }
    // Copies samples [first, first + count) as stored (bytes, floats or ids)
    // into `out` (count * row_bytes()): from memory, or read from the file.
    void read_rows(int64_t first, int64_t count, void* out) const;
    // The storage of sample i (bytes, floats or ids); not for a streamed set.
    // Token windows may overlap (by one id, the last label, at least).
    const void* row(int64_t i) const {
        if (type == SampleType::token)
            return static_cast<const char*>(tokens->data()) + static_cast<size_t>(window_start(i)) * element_bytes();
        return type == SampleType::u8 ? static_cast<const void*>(pixels.data() + static_cast<size_t>(i) * row_bytes())
                                      : static_cast<const void*>(inputs.data() + i * sample_elements());
    }
};

// The channel count of samples of `shape`: the last axis of [H, W, C], else 1.
int channels_of(const Shape& shape);
// The value table of `d` (Dataset::table) for its type and channels:
// value = (v * scale - mean[c]) / std[c], in double, rounded once to float.
// `mean`/`std` empty: no normalization.
void make_table(Dataset& d, double scale, const std::vector<double>& mean, const std::vector<double>& std);
// Float samples (already scaled): (x - mean[c]) / std[c] in place, what make_table does for bytes.
void normalize_floats(Dataset& d, const std::vector<double>& mean, const std::vector<double>& std);
// Samples [begin, end) as the model reads them (no augmentation): floats.
std::vector<float> model_inputs(const Dataset& d, int64_t begin, int64_t end);
// The labels of samples [begin, end): label_width values each (token windows: the next ids).
std::vector<int32_t> sample_labels(const Dataset& d, int64_t begin, int64_t end);

struct DataSplits {
    Dataset train;
    Dataset validation;            // empty unless data.validation_split > 0 (the LAST fraction of train)
    Dataset test;                  // empty when not requested
};

enum class Need { train, test, both };

// Resolves data.dataset / data.path, reads the files of data.format (idx, csv,
// synthetic), applies limit / test_limit / validation_split / scale.
// `model_input_shape` is used by the synthetic format (its samples take that shape)
// and to check that real data matches the model (ConfigError naming both shapes).
// Throws DataError naming the file and what to do (e.g. how to install a data set).
// `worker` / `workers`: with data.shard_files and workers > 1, the training set
// holds only this worker's part (DatasetPart) and is read without the others'
// samples; the validation split (the last fraction of the whole training set)
// is read whole by every worker. Otherwise they change nothing.
DataSplits load_splits(const config::DataConfig& cfg, const Shape& model_input_shape, Need need, int worker = 0,
                       int workers = 1);

}  // namespace gputrain::data
