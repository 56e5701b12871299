// PredictInputs: the samples `gputrain predict` scores, read from one file:
// an IDX images file (plain or .gz), a CSV in the training layout (label column
// optional) or an NPY array of shape (N, ...). The format is chosen by the file
// name: *.npy, *.csv, anything else IDX.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.hpp"

namespace gputrain::data {

struct PredictInputs {
    int64_t rows = 0;
    std::vector<float> values;    // rows * shape_elements(model input), scaled by data.scale
    std::vector<int32_t> labels;  // from a labeled CSV, else empty
    std::string format;           // "idx", "csv" or "npy"
    float largest_raw = 0;        // the largest |value| before scaling
};

// Each sample must hold as many elements as `model_input_shape` (ConfigError
// naming the file, its sample shape and the model's otherwise). Values are
// multiplied by data.scale (`byte_scale` for bytes: IDX files and uint8
// arrays; `float_scale` for the rest: they differ under scale: auto) and
// normalized by `mean`/`std` (data.normalize; empty: none), as the training
// data were. A CSV file may hold the features alone, or the columns the
// training file had: a label first, or the target columns (`target_columns`,
// data.target_columns), which are left out.
PredictInputs read_predict_inputs(const std::string& path, const Shape& model_input_shape, double byte_scale,
                                  double float_scale, const std::vector<double>& mean = {},
                                  const std::vector<double>& std = {},
                                  const std::vector<std::string>& target_columns = {});

}  // namespace gputrain::data
