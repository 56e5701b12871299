// CsvReader: a numeric CSV table, one sample a line, the class label in the
// first column and the features after it (the layout of the Kaggle MNIST and
// Fashion-MNIST CSVs). An optional header line is recognised by a first field
// that is not a number.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gputrain::data {

struct CsvTable {
    int64_t feature_columns = 0;   // columns after the label
    std::vector<float> features;   // rows * feature_columns, as written (not scaled)
    std::vector<int32_t> labels;   // one per row, non-negative integers
};

// Throws DataError "PATH: problem" (missing file, no rows) or "PATH:LINE: problem"
// (wrong field count, a field that is not a number, a label that is not a class index).
CsvTable read_csv(const std::string& path);

}  // namespace gputrain::data
