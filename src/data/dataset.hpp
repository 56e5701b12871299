// Dataset: samples held in host memory, inputs already scaled to float.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "core/shape.hpp"

namespace gputrain::data {

struct Dataset {
    Shape sample_shape;            // e.g. {28, 28}; inputs hold size() * shape_elements(sample_shape) floats
    int64_t num_classes = 0;       // labels are in [0, num_classes)
    std::vector<float> inputs;     // row-major, one sample after another, scaled by data.scale
    std::vector<int32_t> labels;   // one per sample
    std::string description;       // "fashion-mnist train (/usr/share/datasets/fashion-mnist)"

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
DataSplits load_splits(const config::DataConfig& cfg, const Shape& model_input_shape, Need need);

}  // namespace gputrain::data
