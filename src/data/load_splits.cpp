// load_splits: from DataConfig to the train / validation / test Datasets.
#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "data/cifar_reader.hpp"
#include "data/csv_reader.hpp"
#include "data/dataset.hpp"
#include "data/dataset_resolve.hpp"
#include "data/dataset_split.hpp"
#include "data/idx_reader.hpp"
#include "data/image_folder.hpp"
#include "data/npy.hpp"
#include "data/row_range.hpp"
#include "data/synthetic.hpp"
#include "data/sentencepiece_text.hpp"
#include "data/text_reader.hpp"
#include "data/token_cache.hpp"

namespace gputrain::data {
namespace {

std::string shape_text(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// The model may view the data's samples in any shape with the same number of
// elements (e.g. [784] or [28, 28, 1] for 28x28 images): row-major data needs no copy.
Shape choose_sample_shape(const Shape& data_shape, const Shape& model_shape, const std::string& file) {
    if (model_shape.empty()) return data_shape;
    if (shape_elements(model_shape) != shape_elements(data_shape)) {
        throw ConfigError("model.input_shape " + shape_text(model_shape) + " does not match the data's sample shape " +
                          shape_text(data_shape) + " (" + file + ")");
    }
    return model_shape;
}

int64_t classes_of(const Dataset& d) {
    if (d.real_targets || d.labels.empty()) return 0;
    return int64_t{*std::max_element(d.labels.begin(), d.labels.end())} + 1;
}

// Real-valued targets, `width` per sample, as Dataset::labels holds them.
void set_targets(Dataset& d, const std::vector<float>& values, int width) {
    d.real_targets = true;
    d.label_width = width;
    d.labels.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) d.labels[i] = std::bit_cast<int32_t>(values[i]);
}

std::string require_idx_file(const std::string& dir, const std::string& base) {
    std::string path = find_idx_file(dir, base);
    if (path.empty()) throw DataError(dir + ": no " + base + "(.gz) found (the IDX files are listed in datasets/README.md)");
    return path;
}

// data.stream for one split's samples: true, false, or under auto whether they
// take more than their share of the memory available (and can be streamed).
struct StreamChoice {
    bool on = false;
    bool automatic = false;
    double fraction = 0.5;
    uint64_t above = 0;  // bytes: the share of the memory available

    explicit StreamChoice(const config::DataConfig& cfg)
        : on(cfg.stream), automatic(cfg.stream_auto && !cfg.stream), fraction(cfg.stream_memory_fraction) {
        if (automatic) above = static_cast<uint64_t>(fraction * static_cast<double>(host_memory_available()));
    }
    // `cannot`: why `file` cannot be streamed ("" when it can).
    bool decide(const std::string& file, uint64_t bytes, const std::string& cannot) const {
        if (on) return true;
        if (!automatic || above == 0 || bytes <= above) return false;
        const std::string why = fmt::format("{} holds {} of samples, more than data.stream_memory_fraction ({:g}) of "
                                            "the memory available",
                                            file, human_bytes(bytes), fraction);
        if (!cannot.empty()) {
            spdlog::warn("warning: data.stream: auto: {}, and {}; it is read into memory", why, cannot);
            return false;
        }
        spdlog::info("data.stream: auto: {}: streamed from disk", why);
        return true;
    }
};

uint64_t file_bytes(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    return ec ? 0 : static_cast<uint64_t>(size);
}

// `prefix` is "train" or "t10k", as in the MNIST file names.
// `rows` (optional) picks the samples to keep, as read_idx does.
// data.stream: the images file's header (it must be plain: a .gz cannot be
// read row by row); the rows stay in the file.
Dataset stream_idx_images(const std::string& images_path, const std::string& labels_path, const Shape& model_shape,
                          const RowChooser& rows) {
    if (images_path.ends_with(".gz"))
        throw DataError(images_path + ": data.stream reads rows from an uncompressed file; unpack it next to the .gz "
                        "(gunzip -k " + images_path + ") or set data.stream: false");
    std::ifstream in(images_path, std::ios::binary | std::ios::ate);
    if (!in) throw DataError(images_path + ": cannot open");
    const auto size = static_cast<int64_t>(in.tellg());
    in.seekg(0);
    unsigned char head[4];
    if (!in.read(reinterpret_cast<char*>(head), 4) || head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] < 2)
        throw DataError(images_path + ": not an IDX file of unsigned bytes with a sample shape");
    std::vector<int64_t> dims;
    int64_t count = 1;
    for (int i = 0; i < head[3]; ++i) {
        unsigned char d[4];
        if (!in.read(reinterpret_cast<char*>(d), 4)) throw DataError(images_path + ": truncated IDX header");
        dims.push_back((int64_t{d[0]} << 24) | (d[1] << 16) | (d[2] << 8) | d[3]);
        count *= dims.back();
    }
    const int64_t offset = 4 + 4 * static_cast<int64_t>(dims.size());
    if (size != offset + count)
        throw DataError(fmt::format("{}: {} bytes of data where the header declares {}", images_path, size - offset,
                                    count));
    const IdxArray labels = read_idx(labels_path);
    if (labels.dims.size() != 1 || labels.file_rows != dims[0])
        throw DataError(labels_path + ": " + std::to_string(labels.file_rows) + " labels for " +
                        std::to_string(dims[0]) + " images in " + images_path);
    const RowRange keep = rows ? rows(dims[0]) : RowRange{0, dims[0]};
    Dataset d;
    d.sample_shape = choose_sample_shape(Shape(dims.begin() + 1, dims.end()), model_shape, images_path);
    d.type = SampleType::u8;
    d.labels.assign(labels.bytes.begin() + keep.begin, labels.bytes.begin() + keep.end);
    d.file = std::make_shared<FileRows>(images_path, offset);
    d.file_first = keep.begin;
    if (d.size() == 0) throw DataError(images_path + ": holds no samples");
    return d;
}

Dataset read_idx_split(const std::string& dir, const std::string& prefix, const Shape& model_shape,
                       const RowChooser& rows, const StreamChoice& streaming) {
    const std::string images_path = require_idx_file(dir, prefix + "-images-idx3-ubyte");
    const std::string labels_path = require_idx_file(dir, prefix + "-labels-idx1-ubyte");
    const bool gz = images_path.ends_with(".gz");
    if (streaming.decide(images_path, file_bytes(images_path),
                         gz && !streaming.on ? "a .gz file cannot be read row by row (unpack it with gunzip -k to stream it)"
                                             : ""))
        return stream_idx_images(images_path, labels_path, model_shape, rows);
    const IdxArray images = read_idx(images_path, rows);
    if (images.dims.size() < 2) {
        throw DataError(images_path + ": expected at least 2 dimensions (the count, then each sample's shape), found " +
                        std::to_string(images.dims.size()));
    }
    // The labels of the images kept (a labels file of another length is reported below).
    const IdxArray labels = read_idx(labels_path, [&](int64_t n) {
        return RowRange{std::min(images.first_row, n), std::min(images.first_row + images.dims[0], n)};
    });
    if (labels.dims.size() != 1) {
        throw DataError(labels_path + ": expected 1 dimension (the label count), found " +
                        std::to_string(labels.dims.size()));
    }
    if (labels.file_rows != images.file_rows) {
        throw DataError(labels_path + ": " + std::to_string(labels.file_rows) + " labels for " +
                        std::to_string(images.file_rows) + " images in " + images_path);
    }
    if (images.file_rows == 0) throw DataError(images_path + ": holds no samples");

    Dataset d;
    d.sample_shape = choose_sample_shape(Shape(images.dims.begin() + 1, images.dims.end()), model_shape, images_path);
    d.type = SampleType::u8;  // the bytes as read; ops::PrepareInputs makes floats of each batch
    d.pixels = std::move(images.bytes);
    d.labels.assign(labels.bytes.begin(), labels.bytes.end());
    return d;
}

// `name` is "train" or "test", the files train.csv and test.csv.
Dataset read_csv_split(const std::string& dir, const std::string& name, const Shape& model_shape, double scale,
                       const std::vector<std::string>& target_columns, const RowChooser& rows = nullptr) {
    const std::string path = (std::filesystem::path(dir) / (name + ".csv")).string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) throw DataError(dir + ": no " + name + ".csv found");
    CsvTable table = read_csv(path, 0, rows, target_columns);
    Dataset d;
    d.sample_shape = choose_sample_shape({table.feature_columns}, model_shape, path);
    d.inputs = std::move(table.features);
    for (size_t i = 0; i < d.inputs.size(); ++i) {
        const float v = d.inputs[i];
        d.inputs[i] = static_cast<float>(v * scale);
        if (!std::isfinite(d.inputs[i])) {
            const size_t per_row = static_cast<size_t>(std::max<int64_t>(1, table.feature_columns));
            throw DataError(fmt::format("{}: data row {}, feature {} ({:g}) is beyond float32's range once "
                                        "multiplied by data.scale ({:g}); lower data.scale",
                                        path, i / per_row + 1, i % per_row + 1, v, scale));
        }
    }
    d.columns = std::move(table.header);
    if (!target_columns.empty()) {
        set_targets(d, table.targets, static_cast<int>(table.target_count));
        d.target_names = std::move(table.target_names);
        return d;
    }
    d.labels = std::move(table.labels);
    return d;
}

// data.normalize has a mean and a std for each channel of the samples (or one for all).
void check_normalize(const config::DataConfig& cfg, const Dataset& d) {
    if (cfg.normalize_mean.empty() || d.sample_shape.empty()) return;
    const size_t channels = static_cast<size_t>(channels_of(d.sample_shape));
    if (cfg.normalize_mean.size() != channels && cfg.normalize_mean.size() != 1)
        throw ConfigError(fmt::format("data.normalize: {} mean/std values for samples of shape {} with {} channel{} "
                                      "(the last axis of [height, width, channels], else 1); give {}",
                                      cfg.normalize_mean.size(), shape_text(d.sample_shape), channels,
                                      channels == 1 ? "" : "s", channels == 1 ? "1" : "1 or " + std::to_string(channels)));
}

// `split` "train" or "test": the arrays x_SPLIT (samples) and y_SPLIT (class
// indices), Keras' names: DIR/x_SPLIT.npy and DIR/y_SPLIT.npy, or members of
// the NPZ archive `path` (`npz`). uint8 samples stay bytes; others become
// floats, multiplied by `float_scale` and checked finite.
Dataset read_npy_split(const std::string& path, bool npz, const std::string& split, const Shape& model_shape,
                       double float_scale, bool float_targets, const RowChooser& rows, const StreamChoice& streaming) {
    const std::string x_name = "x_" + split, y_name = "y_" + split;
    const std::string x_path = npz ? path + ":" + x_name + ".npy" : (std::filesystem::path(path) / (x_name + ".npy")).string();
    const std::string y_path = npz ? path + ":" + y_name + ".npy" : (std::filesystem::path(path) / (y_name + ".npy")).string();
    std::error_code ec;
    if (!npz)
        for (const std::string& p : {x_path, y_path})
            if (!std::filesystem::is_regular_file(p, ec))
                throw DataError(path + ": no " + std::filesystem::path(p).filename().string() +
                                " found (format npy: x_train.npy and y_train.npy, x_test.npy and y_test.npy, as "
                                "np.save writes them)");
    int64_t x_offset = 0;
    bool stream = streaming.on;
    if (streaming.automatic && npz) {
        streaming.decide(path, file_bytes(path), "an .npz archive cannot be streamed (save the arrays with np.save: format npy)");
    } else if (streaming.automatic) {
        const NpyArray header = read_npy_header(x_path, x_offset);
        stream = streaming.decide(x_path, file_bytes(x_path) - static_cast<uint64_t>(x_offset),
                                  header.dtype == "uint8" ? "" : "its dtype is " + header.dtype + ", and streaming reads uint8");
    }
    if (stream && npz)
        throw ConfigError("data.stream: reads rows from .npy files, not from an .npz archive; save the arrays with "
                          "np.save (format npy) or set data.stream: false");
    NpyArray x = stream ? read_npy_header(x_path, x_offset)
                 : npz  ? read_npz_array(path, x_name, /*keep_bytes=*/true)
                        : read_npy(x_path, /*keep_bytes=*/true);
    if (stream && x.dtype != "uint8")
        throw ConfigError(x_path + ": data.stream reads uint8 arrays (bytes, like images), and this one is " + x.dtype +
                          "; store bytes or set data.stream: false");
    const NpyArray y = npz ? read_npz_array(path, y_name) : read_npy(y_path);
    if (x.shape.size() < 2)
        throw DataError(fmt::format("{}: shape {} is not (samples, ...): expected at least 2 dimensions", x_path,
                                    shape_text(x.shape)));
    // Float labels are real-valued targets, (samples,) or (samples, targets);
    // integer ones class indices, (samples,) or (samples, 1).
    const bool real_dtype = y.dtype.rfind("float", 0) == 0;
    const bool real = float_targets && real_dtype;
    const bool column = y.shape.size() == 2 && (real || y.shape[1] == 1);
    if (y.shape.size() != 1 && !column)
        throw DataError(fmt::format("{}: shape {} is not (samples,) or (samples, {}) of {}", y_path,
                                    shape_text(y.shape), real ? "targets" : "1", real ? "targets" : "class indices"));
    if (column && y.shape[1] == 0) throw DataError(y_path + ": holds no targets (shape " + shape_text(y.shape) + ")");
    if (y.shape[0] != x.shape[0])
        throw DataError(fmt::format("{}: {} labels for the {} samples of {}", y_path, y.shape[0], x.shape[0], x_path));
    if (x.shape[0] == 0) throw DataError(x_path + ": holds no samples");
    // Arrays of images keep their layout: (N, 3, H, W) is not (N, H, W, 3), though it has as many values.
    const Shape sample(x.shape.begin() + 1, x.shape.end());
    if (sample.size() >= 2 && model_shape.size() >= 2 && sample != model_shape)
        throw ConfigError(fmt::format("{}: samples of shape {} are not laid out as model.input_shape {}; transpose "
                                      "them (channels last: np.transpose(x, (0, 2, 3, 1)) for (N, C, H, W)) or give "
                                      "model.input_shape {}",
                                      x_path, shape_text(sample), shape_text(model_shape), shape_text(sample)));
    Dataset d;
    d.sample_shape = choose_sample_shape(sample, model_shape, x_path);
    const int64_t n = x.shape[0], per = d.sample_elements();
    const RowRange keep = rows ? rows(n) : RowRange{0, n};
    if (real) {
        const int64_t width = column ? y.shape[1] : 1;
        const std::vector<float> targets(y.values.begin() + keep.begin * width, y.values.begin() + keep.end * width);
        for (size_t i = 0; i < targets.size(); ++i)
            if (!std::isfinite(targets[i]))
                throw DataError(fmt::format("{}: target {} of sample {} is {}; targets must be finite", y_path,
                                            static_cast<int64_t>(i) % width, keep.begin + static_cast<int64_t>(i) / width,
                                            std::isnan(targets[i]) ? "NaN" : "infinite"));
        set_targets(d, targets, static_cast<int>(width));
    }
    for (int64_t i = keep.begin; i < keep.end && !real; ++i) {
        const float v = y.values[static_cast<size_t>(i)];
        if (!(v >= 0.0f) || v != std::floor(v) || v > 2147483647.0f)
            throw DataError(fmt::format("{}: label {:g} of sample {} is not a class index (a whole number >= 0){}",
                                        y_path, v, i,
                                        real_dtype ? "; the loss is a crossentropy, and real-valued targets need "
                                                     "mean_squared_error, mean_absolute_error or huber"
                                                   : ""));
        d.labels.push_back(static_cast<int32_t>(v));
    }
    if (stream) {
        d.type = SampleType::u8;
        d.file = std::make_shared<FileRows>(x_path, x_offset);
        d.file_first = keep.begin;
        return d;
    }
    if (!x.bytes.empty()) {
        d.type = SampleType::u8;
        d.pixels.assign(x.bytes.begin() + keep.begin * per, x.bytes.begin() + keep.end * per);
        return d;
    }
    d.inputs.assign(x.values.begin() + keep.begin * per, x.values.begin() + keep.end * per);
    for (size_t i = 0; i < d.inputs.size(); ++i) {
        const float raw = d.inputs[i];
        const float v = static_cast<float>(raw * float_scale);
        if (!std::isfinite(v))
            throw DataError(fmt::format("{}: sample {}, element {} is {}; the model takes finite inputs", x_path,
                                        keep.begin + static_cast<int64_t>(i) / per, static_cast<int64_t>(i) % per,
                                        std::isnan(raw)   ? "NaN"
                                        : std::isinf(raw) ? "infinite"
                                                          : "too large once multiplied by data.scale"));
        d.inputs[i] = v;
    }
    return d;
}

void check_config(const config::DataConfig& cfg, config::DataFormat format) {
    if (cfg.stream && format != config::DataFormat::idx && format != config::DataFormat::npy &&
        format != config::DataFormat::image_folder)
        throw ConfigError(std::string("data.stream: reads rows from IDX, NPY (uint8) and image folder caches, not ") +
                          config::name_of(format) + " data; set data.stream: false");
    if (format != config::DataFormat::synthetic && cfg.dataset.empty() == cfg.path.empty()) {
        throw ConfigError("data: set exactly one of data.dataset (a name such as fashion-mnist) and data.path (a folder)");
    }
    if (!(cfg.validation_split >= 0.0 && cfg.validation_split < 1.0)) {
        throw ConfigError(fmt::format("data.validation_split must be in [0, 1), got {}", cfg.validation_split));
    }
    if (cfg.limit < 0) throw ConfigError("data.limit must be >= 0 (0 = all), got " + std::to_string(cfg.limit));
    if (cfg.test_limit < 0) {
        throw ConfigError("data.test_limit must be >= 0 (0 = all), got " + std::to_string(cfg.test_limit));
    }
}

// The training rows a worker reads with data.shard_files: its part of the
// samples data.limit and data.validation_split leave for training; the
// validation samples (the rest, up to data.limit) are read by every worker.
struct ShardPlan {
    const config::DataConfig& cfg;
    std::string what;  // for the validation error
    int worker, workers;
    int64_t used = 0;   // samples after data.limit
    int64_t whole = 0;  // of those, for training

    RowRange training_part(int64_t file_rows) {
        used = cfg.limit > 0 ? std::min(file_rows, cfg.limit) : file_rows;
        whole = cfg.validation_split > 0.0 ? training_count(used, cfg.validation_split, what) : used;
        const RowRange part = part_of(whole, worker, workers);
        if (part.begin == part.end)
            throw ConfigError(fmt::format("data.shard_files: {} training samples cannot be shared by {} workers ({})",
                                          whole, workers, what));
        return part;
    }
    DatasetPart part() const { return {worker, workers, whole}; }
};

std::string part_text(const Dataset& d) {
    const RowRange r = part_of(d.part.whole, d.part.index, d.part.count);
    return fmt::format("samples {}..{} of {} (worker {} of {}, data.shard_files)", r.begin, r.end - 1, d.part.whole,
                       d.part.index, d.part.count);
}

// "1 window", "3 windows".
std::string counted(int64_t n, const char* unit) { return fmt::format("{} {}{}", n, unit, n == 1 ? "" : "s"); }

}  // namespace

DataSplits load_splits(const config::DataConfig& cfg, const Shape& model_input_shape, Need need, int worker,
                       int workers) {
    const config::DataFormat format = cfg.dataset == "synthetic" ? config::DataFormat::synthetic : cfg.format;
    check_config(cfg, format);
    const bool want_train = need != Need::test;
    const bool want_test = need != Need::train;
    const bool sharded = want_train && cfg.shard_files && workers > 1;

    DataSplits splits;
    std::string source;  // "fashion-mnist" / "data.path", for descriptions
    std::string dir;
    bool split_done = false;  // the sharded read already applied limit and validation_split
    const char* unit = format == config::DataFormat::text ? "window" : "sample";  // what the descriptions count
    std::string text_description;
    if (format == config::DataFormat::text) {
        if (model_input_shape.size() != 1)
            throw ConfigError("format text: model.input_shape " + shape_text(model_input_shape) +
                              " is not a block of tokens: give [positions], e.g. input_shape: [256]");
        const std::string path = cfg.path.empty() ? resolve_dataset_dir(cfg.dataset, format) : cfg.path;
        source = cfg.path.empty() ? cfg.dataset : "data.path";
        const std::vector<std::string> files = text_files(path);
        // sentencepiece: the model's bytes, read (its hash is in the token cache's
        // key) or trained from the text, which the cache spares when it holds the text.
        std::string identity;
        std::function<std::string()> model;
        if (cfg.tokenizer == config::Tokenizer::sentencepiece) {
            if (!cfg.tokenizer_model.empty()) {
                std::ifstream in(cfg.tokenizer_model, std::ios::binary);
                if (!in) throw DataError("data.tokenizer_model: " + cfg.tokenizer_model + ": cannot be read");
                std::string bytes(std::istreambuf_iterator<char>(in), {});
                identity = model_identity(bytes);
                model = [bytes = std::move(bytes)] { return bytes; };
            } else {
                identity = fmt::format("trained from the text, data.vocab_size {}", cfg.vocab_size);
                model = [&files, &cfg] { return SentencePieceText::train(files, cfg.vocab_size); };
            }
        }
        TextTokens tokens = cached_text_tokens(files, cfg.tokenizer, identity, model, default_cache_dir());
        // The splits are windows of one copy of the ids (mapped, or held once).
        const auto ids = std::make_shared<const TokenIds>(std::move(tokens.ids));
        const int64_t positions = model_input_shape[0];
        const int64_t windows = (static_cast<int64_t>(ids->size()) - 1) / positions;
        if (windows < 1)
            throw DataError(fmt::format("{}: {} tokens make no sample of {} positions (and the label of the last); "
                                        "give a longer text or a smaller model.input_shape",
                                        tokens.files, ids->size(), positions));
        const std::string description = fmt::format("{} ({}, {} tokens, {} vocabulary)", source, tokens.files,
                                                    ids->size(), config::name_of(cfg.tokenizer));
        if (want_train) {
            splits.train = text_windows(tokens, ids, positions, 0, windows);
            splits.train.description = description;
        }
        if (want_test) {
            // No test file: evaluate reads the windows data.validation_split holds out.
            if (cfg.validation_split <= 0.0)
                throw ConfigError("format text: evaluate reads the last data.validation_split of the text's windows, "
                                  "and data.validation_split is 0; set it (e.g. 0.1) as training did");
            const int64_t used = cfg.limit > 0 ? std::min(windows, cfg.limit) : windows;
            splits.test =
                text_windows(tokens, ids, positions, training_count(used, cfg.validation_split, description), used);
            text_description = description;  // the test set's, once test_limit is applied
        }
    } else if (format == config::DataFormat::synthetic) {
        if (want_train) {
            splits.train = make_synthetic(model_input_shape, cfg.synthetic_samples, cfg.synthetic_classes,
                                          cfg.synthetic_seed, SyntheticSplit::train);
        }
        if (want_test) {
            splits.test = make_synthetic(model_input_shape, std::max<int64_t>(1, cfg.synthetic_samples / 4),
                                         cfg.synthetic_classes, cfg.synthetic_seed, SyntheticSplit::test);
        }
    } else {
        dir = cfg.path.empty() ? resolve_dataset_dir(cfg.dataset, format) : check_data_path(cfg.path, format);
        source = cfg.path.empty() ? cfg.dataset : "data.path";
        const bool idx = format == config::DataFormat::idx;
        const bool cifar = format == config::DataFormat::cifar10 || format == config::DataFormat::cifar100;
        const CifarKind kind = format == config::DataFormat::cifar10 ? CifarKind::cifar10 : CifarKind::cifar100;
        const auto read_cifar_split = [&](bool train, const RowChooser& rows) {
            const std::vector<std::string> files = cifar_files(dir, kind, train);
            Dataset d = read_cifar(files, kind, rows);
            d.sample_shape = choose_sample_shape(d.sample_shape, model_input_shape, files[0]);
            return d;
        };
        const bool images = format == config::DataFormat::image_folder;
        const StreamChoice streaming(cfg);
        std::vector<std::string> classes;  // image folders: the training set's class names
        ImageFolderOptions image_options;
        if (images) {
            const Shape& shape = model_input_shape;
            if ((shape.size() != 2 && shape.size() != 3) || (shape.size() == 3 && shape[2] != 1 && shape[2] != 3))
                throw ConfigError("format image_folder: model.input_shape " + shape_text(shape) +
                                  " is not an image size: give [height, width, 1] (grayscale) or [height, width, 3] "
                                  "(RGB); images are resized to it");
            image_options = {static_cast<int>(shape[0]), static_cast<int>(shape[1]),
                             shape.size() == 3 ? static_cast<int>(shape[2]) : 1, cfg.crop_to_aspect_ratio,
                             cfg.skip_bad_files, cfg.cache_dir, cfg.stream, streaming.automatic ? streaming.above : 0};
        }
        const auto read_image_split = [&](const std::string& split, const RowChooser& rows) {
            const std::string folder = image_split_dir(dir, split);
            if (folder.empty())
                throw DataError(dir + ": no " + split + " folder (format image_folder: " + dir + "/train and " + dir +
                                "/test, each with one folder per class)");
            Dataset d = read_image_folder(folder, image_options, split == "train" ? std::vector<std::string>{} : classes,
                                          split == "train" ? &classes : nullptr, rows);
            d.sample_shape = model_input_shape;
            return d;
        };
        const bool npy = format == config::DataFormat::npy || format == config::DataFormat::npz;
        if (format == config::DataFormat::csv && want_train) {  // CSV is parsed into memory: said when auto would stream it
            const std::string csv = (std::filesystem::path(dir) / "train.csv").string();
            streaming.decide(csv, file_bytes(csv), "CSV is parsed into memory (only IDX, uint8 NPY and image folders stream)");
        }
        const bool npz = format == config::DataFormat::npz;
        const auto read_train = [&](const RowChooser& rows) {
            if (npy) return read_npy_split(dir, npz, "train", model_input_shape, cfg.scale_for(false), cfg.float_labels_are_targets, rows, streaming);
            if (images) return read_image_split("train", rows);
            if (cifar) return read_cifar_split(true, rows);
            return idx ? read_idx_split(dir, "train", model_input_shape, rows, streaming)
                       : read_csv_split(dir, "train", model_input_shape, cfg.scale_for(false), cfg.target_columns, rows);
        };
        if (sharded) {
            ShardPlan plan{cfg, source + " train (" + dir + ")", worker, workers};
            splits.train = read_train([&](int64_t n) { return plan.training_part(n); });
            splits.train.part = plan.part();
            if (plan.used > plan.whole)
                splits.validation = read_train([&](int64_t) { return RowRange{plan.whole, plan.used}; });
            split_done = true;
        } else if (want_train) {
            splits.train = read_train(nullptr);
        }
        if (want_test && images && classes.empty()) {  // the test set's labels follow the training classes
            const std::string train_dir = image_split_dir(dir, "train");
            if (!train_dir.empty()) classes = image_classes(train_dir);
        }
        if (want_test) {
            splits.test = npy     ? read_npy_split(dir, npz, "test", model_input_shape, cfg.scale_for(false), cfg.float_labels_are_targets, nullptr, streaming)
                          : images  ? read_image_split("test", nullptr)
                          : cifar ? read_cifar_split(false, nullptr)
                          : idx ? read_idx_split(dir, "t10k", model_input_shape, nullptr, streaming)
                                : read_csv_split(dir, "test", model_input_shape, cfg.scale_for(false), cfg.target_columns);
        }
        // CSV features are taken by position: a test file with its columns in another order would be misread.
        if (want_test && format == config::DataFormat::csv && !splits.test.columns.empty()) {
            const std::vector<std::string> train_columns =
                want_train ? splits.train.columns : csv_header((std::filesystem::path(dir) / "train.csv").string());
            if (!train_columns.empty() && train_columns != splits.test.columns)
                throw DataError(fmt::format("{}: its header ({}) is not train.csv's ({}); the columns are read by "
                                            "position, so write them in training's order",
                                            (std::filesystem::path(dir) / "test.csv").string(),
                                            fmt::join(splits.test.columns, ","), fmt::join(train_columns, ",")));
        }
        if (want_train && want_test && splits.train.sample_shape != splits.test.sample_shape) {
            throw DataError(dir + ": test samples have shape " + shape_text(splits.test.sample_shape) +
                            ", training samples " + shape_text(splits.train.sample_shape));
        }
        // Classes are counted over everything read, before limits, so that a
        // data.limit run has the same output size as the full one (with
        // data.shard_files: over this worker's part and the validation samples).
        // CIFAR's classes are fixed by the format.
        const int64_t classes_count = images ? static_cast<int64_t>(classes.size())
                                      : cifar ? (kind == CifarKind::cifar10 ? 10 : 100)
                                      : std::max({classes_of(splits.train), classes_of(splits.validation),
                                                  classes_of(splits.test)});
        splits.train.num_classes = splits.validation.num_classes = splits.test.num_classes = classes_count;
        if (images) splits.train.class_names = splits.validation.class_names = splits.test.class_names = classes;
        splits.train.description = source + " train (" + dir + ")";
        splits.test.description = source + " test (" + dir + ")";
    }

    if (want_train && !split_done) {
        keep_first(splits.train, cfg.limit);
        if (cfg.validation_split > 0.0) {
            splits.validation = split_off_validation(splits.train, cfg.validation_split);
            splits.validation.description = "validation: the last " + counted(splits.validation.size(), unit) +
                                            " of " + splits.train.description;
        }
        if (sharded) {  // generated data: made whole, then cut to this worker's part
            const int64_t whole = splits.train.size();
            const RowRange part = part_of(whole, worker, workers);
            if (part.begin == part.end)
                throw ConfigError(fmt::format("data.shard_files: {} training samples cannot be shared by {} workers",
                                              whole, workers));
            splits.train = slice(splits.train, part.begin, part.end);
            splits.train.part = {worker, workers, whole};
        }
    } else if (want_train && splits.validation.size() > 0) {
        splits.validation.description = "validation: the last " + counted(splits.validation.size(), unit) +
                                        " of " + splits.train.description;
    }
    // data.sequence_stride: the training windows' ids (data.limit's and
    // validation_split's windows of T tokens, never the held-out ones) cut
    // into windows every `sequence_stride` ids.
    if (want_train && format == config::DataFormat::text && cfg.sequence_stride > 0 &&
        cfg.sequence_stride != splits.train.sample_elements()) {
        splits.train = windows_every(std::move(splits.train), cfg.sequence_stride);
        splits.train.description +=
            fmt::format(", windows every {} token{}", cfg.sequence_stride, cfg.sequence_stride == 1 ? "" : "s");
    }
    if (sharded) splits.train.description += ": " + part_text(splits.train);
    if (want_test) {
        const int64_t held = splits.test.size();
        keep_first(splits.test, cfg.test_limit);
        if (format == config::DataFormat::text)
            splits.test.description = (splits.test.size() < held ? "the first " + counted(splits.test.size(), unit) +
                                                                       " of the last " + std::to_string(held)
                                                                 : "the last " + counted(held, unit)) +
                                      " of " + text_description;
    }
    if (format == config::DataFormat::text) return splits;  // token ids: no scale or table
    for (Dataset* d : {&splits.train, &splits.validation, &splits.test}) {
        check_normalize(cfg, *d);
        if (d->type == SampleType::f32) normalize_floats(*d, cfg.normalize_mean, cfg.normalize_std);
        make_table(*d, cfg.scale_for(d->type == SampleType::u8), cfg.normalize_mean, cfg.normalize_std);
    }
    return splits;
}

}  // namespace gputrain::data
