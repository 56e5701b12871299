// CsvReader: a numeric CSV table, one sample a line, the class label in the
// first column and the features after it (the layout of the Kaggle MNIST and
// Fashion-MNIST CSVs), or, with target columns named (data.target_columns),
// real-valued targets in those columns and the features in all others. An
// optional header line is recognised by a first field that is not a number.
// For prediction the label (or target) columns may be left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/row_range.hpp"

namespace gputrain::data {

struct CsvTable {
    int64_t feature_columns = 0;   // columns after the label
    std::vector<float> features;   // rows * feature_columns, as written (not scaled)
    std::vector<int32_t> labels;   // one per row, non-negative integers; empty when the file has no labels
    // With target columns: rows * target_count values, in the order the columns were named.
    std::vector<float> targets;
    int64_t target_count = 0;
    std::vector<std::string> header;        // the header line's names, trimmed; empty without one
    std::vector<std::string> target_names;  // with target columns and a header: theirs, in the order named
    int64_t rows = 0;              // rows kept
    int64_t first_row = 0;         // the kept rows are data rows [first_row, first_row + rows) of the file
    int64_t file_rows = 0;         // data rows in the file (the header line not counted)
};

// Throws DataError "PATH: problem" (missing file, no rows) or "PATH:LINE: problem"
// (wrong field count, a field that is not a number, a label that is not a class index).
// `unlabeled_features` > 0: a file whose lines have exactly that many fields has
// no label column (every field is a feature); lines with one more field have one.
// With `choose`, the file is read twice: once to count its data rows, then to
// parse only the rows `choose` returns; the other rows are skipped unparsed
// (so an error in another worker's rows is not reported).
// `target_columns`: the columns of real-valued targets, each a 0-based index
// ("0", "-1" for the last) or a header name; with them a row has no label.
CsvTable read_csv(const std::string& path, int64_t unlabeled_features = 0, const RowChooser& choose = nullptr,
                  const std::vector<std::string>& target_columns = {});

// The names of `path`'s header line, trimmed; empty when it has none or cannot be read.
std::vector<std::string> csv_header(const std::string& path);

}  // namespace gputrain::data
