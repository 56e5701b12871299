#include "data/dataset_split.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace gputrain::data {

Dataset slice(const Dataset& dataset, int64_t begin, int64_t end) {
    Dataset out;
    out.sample_shape = dataset.sample_shape;
    out.num_classes = dataset.num_classes;
    out.description = dataset.description;
    out.type = dataset.type;
    out.table = dataset.table;
    out.channels = dataset.channels;
    const int64_t elements = dataset.sample_elements();
    out.label_width = dataset.label_width;
    out.real_targets = dataset.real_targets;
    out.target_names = dataset.target_names;
    out.columns = dataset.columns;
    out.class_names = dataset.class_names;
    out.text = dataset.text;
    out.tokenizer = dataset.tokenizer;
    out.vocabulary = dataset.vocabulary;
    out.tokenizer_model = dataset.tokenizer_model;
    if (dataset.type == SampleType::token) {  // the same ids, from window `begin` on
        out.tokens = dataset.tokens;
        out.first_token = dataset.window_start(begin);
        out.window_stride = dataset.window_stride;
        out.windows = end - begin;
        return out;
    }
    out.labels.assign(dataset.labels.begin() + begin * dataset.label_width,
                      dataset.labels.begin() + end * dataset.label_width);
    if (dataset.streamed()) {  // the same file, from row `begin` on
        out.file = dataset.file;
        out.file_first = dataset.file_first + begin;
    } else if (dataset.type == SampleType::u8)
        out.pixels.assign(dataset.pixels.begin() + begin * elements, dataset.pixels.begin() + end * elements);
    else
        out.inputs.assign(dataset.inputs.begin() + begin * elements, dataset.inputs.begin() + end * elements);
    return out;
}

void keep_first(Dataset& dataset, int64_t n) {
    if (n <= 0 || n >= dataset.size()) return;
    if (dataset.type == SampleType::token) {
        dataset.windows = n;
        return;
    }
    dataset.labels.resize(static_cast<size_t>(n * dataset.label_width));
    const size_t values = static_cast<size_t>(n * dataset.sample_elements());
    if (dataset.streamed()) {
        // The rows stay in the file; only the labels say how many there are.
    } else if (dataset.type == SampleType::u8) {
        dataset.pixels.resize(values);
        dataset.pixels.shrink_to_fit();
    } else {
        dataset.inputs.resize(values);
        dataset.inputs.shrink_to_fit();
    }
    dataset.labels.shrink_to_fit();
}

int64_t training_count(int64_t n, double fraction, const std::string& what) {
    // The same arithmetic as Keras's train_validation_split: int(n * (1 - fraction)).
    const auto split_at = static_cast<int64_t>(static_cast<double>(n) * (1.0 - fraction));
    if (split_at <= 0) {
        throw DataError(fmt::format("data.validation_split {} leaves no training samples out of {} ({})", fraction, n,
                                    what));
    }
    return split_at;
}

Dataset split_off_validation(Dataset& train, double fraction) {
    if (!(fraction > 0.0 && fraction < 1.0)) {
        throw ConfigError(fmt::format("data.validation_split must be in [0, 1), got {}", fraction));
    }
    const int64_t n = train.size();
    const int64_t split_at = training_count(n, fraction, train.description);
    Dataset validation = slice(train, split_at, n);
    keep_first(train, split_at);
    return validation;
}

}  // namespace gputrain::data
