#include "data/predict_inputs.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "data/csv_reader.hpp"
#include "data/dataset.hpp"
#include "data/idx_reader.hpp"
#include "data/npy.hpp"

namespace gputrain::data {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// Case-insensitive: spreadsheets and Windows tools write X.CSV.
bool ends_with(const std::string& s, const std::string& suffix) {
    if (s.size() < suffix.size()) return false;
    for (size_t i = 0; i < suffix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
    return true;
}

// The axes longer than 1: [28, 28, 1] and [28, 28] lay out the same values.
std::vector<int64_t> without_ones(std::vector<int64_t> dims) {
    std::erase(dims, int64_t{1});
    return dims;
}

// (N, d1, d2, ...) must hold N samples of the model's element count ((N) for
// a model of one input). With `same_layout` (NPY, which PyTorch pipelines
// write channels first), also laid out as model.input_shape (up to axes of
// 1), or flat on either side: (N, 2, 7, 7) for [7, 7, 2] would be read in
// the wrong order. IDX files are taken as training takes them, by count.
void check_sample_shape(const std::string& path, const std::vector<int64_t>& dims, const Shape& model_shape,
                        const std::string& what, bool same_layout) {
    const std::vector<int64_t> sample(dims.begin() + std::min<size_t>(1, dims.size()), dims.end());
    int64_t elements = 1;
    for (const int64_t d : sample) elements *= d;
    const int64_t wanted = shape_elements(model_shape);
    const std::string expected = "expected [N, " + std::to_string(wanted) + "] or [N] + model.input_shape";
    if (dims.empty() || (dims.size() < 2 && wanted != 1) || elements != wanted)
        throw DataError(path + ": " + what + " shape " + shape_text(dims) + " does not hold samples of " +
                        "model.input_shape " + shape_text(model_shape) + "; " + expected);
    const std::vector<int64_t> a = without_ones(sample), b = without_ones(model_shape);
    if (same_layout && a != b && a.size() > 1 && b.size() > 1)
        throw DataError(path + ": " + what + " shape " + shape_text(dims) + " holds " + std::to_string(wanted) +
                        " values a sample, but not laid out as model.input_shape " + shape_text(model_shape) +
                        " (channels last, as training reads them); reshape or transpose it: " + expected);
}

}  // namespace

PredictInputs read_predict_inputs(const std::string& path, const Shape& model_input_shape, double byte_scale,
                                  double float_scale, const std::vector<double>& mean, const std::vector<double>& std,
                                  const std::vector<std::string>& target_columns) {
    double scale = float_scale;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        const auto status = std::filesystem::status(path, ec);
        if (!std::filesystem::exists(status)) throw DataError(path + ": no such file");
        throw DataError(path + ": not a regular file (" +
                        (std::filesystem::is_directory(status) ? "a directory" : "a device, pipe or socket") +
                        "); give an IDX, CSV or NPY file");
    }
    const int64_t elements = shape_elements(model_input_shape);
    PredictInputs out;
    if (ends_with(path, ".npy")) {
        NpyArray array = read_npy(path);
        check_sample_shape(path, array.shape, model_input_shape, "the array's", /*same_layout=*/true);
        out.format = "npy";
        if (array.dtype == "uint8") scale = byte_scale;
        out.rows = array.shape[0];
        out.values = std::move(array.values);
    } else if (ends_with(path, ".csv")) {
        CsvTable table = read_csv(path, elements, nullptr, target_columns);
        if (!target_columns.empty() && table.feature_columns != elements) {
            throw DataError(path + ": " + std::to_string(table.feature_columns + table.target_count) +
                            " columns, but model.input_shape " + shape_text(model_input_shape) + " needs " +
                            std::to_string(elements) + " (the features) or " +
                            std::to_string(elements + static_cast<int64_t>(target_columns.size())) +
                            " (with data.target_columns)");
        }
        if (table.feature_columns != elements) {
            // Neither the features alone nor a label and the features.
            throw DataError(path + ": " + std::to_string(table.feature_columns + 1) + " columns, but model.input_shape " +
                            shape_text(model_input_shape) + " needs " + std::to_string(elements) + " (the features) or " +
                            std::to_string(elements + 1) + " (a label, then the features)");
        }
        out.format = "csv";
        out.rows = table.rows;
        out.values = std::move(table.features);
        out.labels = std::move(table.labels);
    } else {
        IdxArray array = read_idx(path);
        check_sample_shape(path, array.dims, model_input_shape, "the IDX file's", /*same_layout=*/false);
        out.format = "idx";
        scale = byte_scale;
        out.rows = array.dims[0];
        out.values.assign(array.bytes.begin(), array.bytes.end());
    }
    if (out.rows == 0) throw DataError(path + ": holds no samples");
    const int64_t per_sample = std::max<int64_t>(1, elements);
    const size_t channels = static_cast<size_t>(channels_of(model_input_shape));
    for (size_t i = 0; i < out.values.size(); ++i) {
        float& v = out.values[i];
        // NaN or Inf would come out as probabilities that look like any others.
        if (!std::isfinite(v) || !std::isfinite(static_cast<float>(v * scale)))
            throw DataError(path + ": element " + std::to_string(static_cast<int64_t>(i) % per_sample) +
                            " of sample " + std::to_string(static_cast<int64_t>(i) / per_sample) + " is " +
                            (std::isnan(v) ? "NaN" : std::isinf(v) ? "infinite" : "too large once scaled") +
                            "; the model takes finite inputs");
        out.largest_raw = std::max(out.largest_raw, std::abs(v));
        double x = v * scale;
        if (!mean.empty()) {  // data.normalize, as make_table does for the training bytes
            const size_t c = mean.size() == 1 ? 0 : i % channels;
            x = (x - mean[c]) / std[c];
        }
        v = static_cast<float>(x);
    }
    return out;
}

}  // namespace gputrain::data
