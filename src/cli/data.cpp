// gputrain data CONFIG: what the config's data are (samples, shape, storage,
// classes) and the per-channel mean and std of their values after data.scale,
// which data.normalize takes; with --augmented N, the first N training
// samples as a training step of --epoch makes them, written as NPY.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/run_setup.hpp"
#include "config/scalar_text.hpp"
#include "core/error.hpp"
#include "core/utf8.hpp"
#include "data/dataset.hpp"
#include "data/npy.hpp"
#include "train/input_plan.hpp"

namespace gputrain::cli {

namespace {

struct DataArgs {
    CommonOptions common;
    int64_t augmented = 0;
    int64_t epoch = 0;
    std::string out;
};

struct ChannelStats {
    std::vector<double> mean, std, low, high;
};

// Per channel, over every value of `d` after data.scale (before data.normalize).
ChannelStats channel_stats(const data::Dataset& d, double scale) {
    const size_t channels = static_cast<size_t>(data::channels_of(d.sample_shape));
    std::vector<double> sum(channels, 0.0), squares(channels, 0.0);
    ChannelStats s;
    s.low.assign(channels, INFINITY);
    s.high.assign(channels, -INFINITY);
    const size_t per = static_cast<size_t>(d.sample_elements()), n = static_cast<size_t>(d.size()) * per;
    // A chunk of samples at a time (a streamed set is read from its file).
    const int64_t chunk = 4096;
    std::vector<char> rows(static_cast<size_t>(chunk) * d.row_bytes());
    for (int64_t first = 0; first < d.size(); first += chunk) {
        const int64_t count = std::min(chunk, d.size() - first);
        d.read_rows(first, count, rows.data());
        const auto* bytes = reinterpret_cast<const uint8_t*>(rows.data());
        const auto* floats = reinterpret_cast<const float*>(rows.data());
        for (size_t i = 0; i < static_cast<size_t>(count) * per; ++i) {
            const size_t c = i % channels;
            const double v = d.type == data::SampleType::u8 ? bytes[i] * scale : floats[i];
            sum[c] += v;
            squares[c] += v * v;
            s.low[c] = std::min(s.low[c], v);
            s.high[c] = std::max(s.high[c], v);
        }
    }
    const double count = static_cast<double>(n / channels);
    for (size_t c = 0; c < channels; ++c) {
        const double mean = count > 0 ? sum[c] / count : 0.0;
        s.mean.push_back(mean);
        s.std.push_back(count > 0 ? std::sqrt(std::max(0.0, squares[c] / count - mean * mean)) : 0.0);
    }
    return s;
}

std::string shape_text(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::string number_list(const std::vector<double>& values) {
    std::string out = "[";
    for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + fmt::format("{:.4f}", values[i]);
    return out + "]";
}

void describe(const char* split, const data::Dataset& d, double scale) {
    if (d.size() == 0) return;
    // A validation set's description says what it is already ("validation: the last ...").
    const std::string what = d.description.starts_with(std::string(split) + ":") ? d.description
                                                                                    : std::string(split) + ": " + d.description;
    if (d.text) {  // windows of token ids: the vocabulary, not channel statistics
        const std::string mapped =
            d.tokens->mapped() ? ", memory-mapped from the token cache " + d.tokens->mapped_file() : std::string();
        std::printf("%s\n  %lld window%s of %lld tokens, the next token of each position its label; %lld tokens in "
                    "the vocabulary; ids stored as uint%d%s\n",
                    what.c_str(), static_cast<long long>(d.size()), d.size() == 1 ? "" : "s",
                    static_cast<long long>(d.sample_elements()),
                    static_cast<long long>(d.num_classes), d.tokens->width() * 8,
                    mapped.c_str());
        if (!d.vocabulary.empty()) {
            std::string shown;
            for (char32_t c : d.vocabulary) {
                if (c == U'\n') shown += "\\n";
                else if (c == U'\t') shown += "\\t";
                else append_utf8(shown, static_cast<uint32_t>(c));
            }
            std::printf("  characters: %s\n", shown.c_str());
        }
        return;
    }
    std::string labels;
    if (d.real_targets) {
        labels = fmt::format("{} real-valued target{} per sample", d.label_width, d.label_width == 1 ? "" : "s");
    } else {
        const auto [low, high] = std::minmax_element(d.labels.begin(), d.labels.end());
        labels = fmt::format("{} classes (labels {}..{})", d.num_classes, *low, *high);
        if (!d.class_names.empty()) {  // image folders: which folder each label is
            std::string names;
            for (size_t i = 0; i < d.class_names.size() && i < 20; ++i)
                names += fmt::format("{}{} {}", i ? ", " : "", i, d.class_names[i]);
            labels += ": " + names + (d.class_names.size() > 20 ? ", ..." : "");
        }
    }
    std::printf("%s\n  %lld samples of %s, stored as %s%s, %s\n", what.c_str(), static_cast<long long>(d.size()),
                shape_text(d.sample_shape).c_str(), d.type == data::SampleType::u8 ? "bytes (uint8)" : "float32",
                d.streamed() ? (", streamed from " + d.file->path).c_str() : "", labels.c_str());
    for (int j = 0; d.real_targets && j < d.label_width; ++j) {
        double sum = 0, squares = 0, lowest = INFINITY, highest = -INFINITY;
        for (int64_t i = 0; i < d.size(); ++i) {
            const double t = d.target(i, j);
            sum += t, squares += t * t, lowest = std::min(lowest, t), highest = std::max(highest, t);
        }
        const double mean = sum / static_cast<double>(d.size());
        const double var = std::max(0.0, squares / static_cast<double>(d.size()) - mean * mean);
        const std::string name = static_cast<size_t>(j) < d.target_names.size() ? " (" + d.target_names[j] + ")" : "";
        std::printf("  target %d%s: mean %.4f, std %.4f, min %.4g, max %.4g\n", j, name.c_str(), mean, std::sqrt(var),
                    lowest, highest);
    }
    const ChannelStats s = channel_stats(d, scale);
    for (size_t c = 0; c < s.mean.size(); ++c)
        std::printf("  channel %zu after data.scale: mean %.4f, std %.4f, min %.4g, max %.4g\n", c, s.mean[c],
                    s.std[c], s.low[c], s.high[c]);
}

int run_data(DataArgs& args) {
    config::RunConfig cfg = load_config(args.common);
    apply_log_level(cfg, /*quiet=*/true);
    if (args.augmented > 0 && args.out.empty())
        throw ConfigError("--augmented: give --out FILE.npy for the samples");
    if (!args.out.empty() && args.augmented == 0)
        throw ConfigError("--out: writes the samples of --augmented N; give --augmented too");
    if (!args.out.empty() && !args.out.ends_with(".npy"))
        throw ConfigError("--out: '" + args.out + "' does not end in .npy; the samples are written as an NPY file");
    // The values before data.normalize, for the statistics it takes.
    config::DataConfig plain = cfg.data;
    plain.normalize_mean.clear();
    plain.normalize_std.clear();
    // A text's test set is its held-out windows: read with the rest (one tokenization).
    const bool text_with_test = cfg.data.format == config::DataFormat::text && cfg.data.validation_split > 0;
    data::DataSplits splits = data::load_splits(plain, cfg.model.input_shape,
                                                text_with_test ? data::Need::both : data::Need::train);
    // fit needs no test set; evaluate does: say so rather than fail.
    std::string no_test;
    try {
        if (!text_with_test) splits.test = data::load_splits(plain, cfg.model.input_shape, data::Need::test).test;
    } catch (const DataError& e) {
        no_test = e.what();
    } catch (const ConfigError& e) {  // format text without validation_split: nothing held out to score
        no_test = e.what();
    }
    const double byte_scale = cfg.data.scale_for(true), float_scale = cfg.data.scale_for(false);
    const auto scale_of = [&](const data::Dataset& d) { return d.type == data::SampleType::u8 ? byte_scale : float_scale; };
    describe("train", splits.train, scale_of(splits.train));
    describe("validation", splits.validation, scale_of(splits.validation));
    describe("test", splits.test, scale_of(splits.test));
    if (!no_test.empty())
        std::printf("test: not read: %s (fit trains without a test set; evaluate needs one)\n", no_test.c_str());
    // data.normalize is per channel of images: a table's columns (regression on CSV or NPY) have their own scales.
    if (!splits.train.real_targets && !splits.train.text) {
        const ChannelStats s = channel_stats(splits.train, scale_of(splits.train));
        std::printf("\ndata.normalize from the training samples (torchvision's Normalize, after data.scale):\n"
                    "  normalize: {mean: %s, std: %s}\n",
                    number_list(s.mean).c_str(), number_list(s.std).c_str());
    }
    if (args.augmented == 0) return 0;

    data::Dataset& train = splits.train;
    const int64_t count = std::min(args.augmented, train.size());
    if (train.type == data::SampleType::f32)
        data::normalize_floats(train, cfg.data.normalize_mean, cfg.data.normalize_std);
    data::make_table(train, scale_of(train), cfg.data.normalize_mean, cfg.data.normalize_std);
    const std::vector<float> x = train::augmented_samples(cfg, train, 0, count, args.epoch);
    std::vector<int64_t> shape{count};
    shape.insert(shape.end(), train.sample_shape.begin(), train.sample_shape.end());
    data::write_npy_float32(args.out, shape, x);
    std::printf("\nWrote %s: the first %lld training samples as epoch %lld's steps make them (%s)\n", args.out.c_str(),
                static_cast<long long>(count), static_cast<long long>(args.epoch),
                train.text                 ? "format text: the token ids as floats, as the model reads them"
                : cfg.data.augment.empty() ? "data.augment is empty: scaled and normalized only"
                                           : "scaled, normalized and augmented");
    return 0;
}

}  // namespace

Action add_data_command(CLI::App& app) {
    auto args = std::make_shared<DataArgs>();
    CLI::App* cmd = app.add_subcommand(
        "data", "Describe the config's data (samples, shape, storage, classes) and print the per-channel mean and std "
                "that data.normalize takes; for a text (format: text), its tokens, vocabulary, token cache and "
                "windows (model.input_shape[0] tokens, every data.sequence_stride). With --augmented N, write the first "
                "N training samples as training makes them (scaled, normalized, augmented; a text's windows as "
                "token ids) to an NPY file");
    cmd->add_option("config", args->common.config_path, "YAML config file (default: RUN_DIR/config.yaml with --run-dir)");
    cmd->add_option("--run-dir", args->common.run_dir, "Run folder whose config.yaml (written by fit) to use")
        ->check(non_empty_path());
    cmd->add_option("--set", args->common.overrides, "Override a config key, e.g. --set data.limit=1000")
        ->allow_extra_args(false);
    cmd->add_option("--augmented", args->augmented, "Write the first N training samples as a training step makes them")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--epoch", args->epoch, "The epoch whose augmentation to show (default 0)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--out", args->out, "NPY file for --augmented (float32, N x the sample shape)")
        ->check(non_empty_path());
    return [args] { return run_data(*args); };
}

}  // namespace gputrain::cli
