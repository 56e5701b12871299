// Dataset: samples held in host memory, inputs already scaled to float.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "core/shape.hpp"

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

struct Dataset {
    Shape sample_shape;            // e.g. {28, 28}; inputs hold size() * shape_elements(sample_shape) floats
    int64_t num_classes = 0;       // labels are in [0, num_classes)
    std::vector<float> inputs;     // row-major, one sample after another, scaled by data.scale
    std::vector<int32_t> labels;   // one per sample
    std::string description;       // "fashion-mnist train (/usr/share/datasets/fashion-mnist)"
    DatasetPart part;              // the training set of a worker with data.shard_files

    int64_t size() const { return static_cast<int64_t>(labels.size()); }
    int64_t sample_elements() const { return shape_elements(sample_shape); }
};

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
