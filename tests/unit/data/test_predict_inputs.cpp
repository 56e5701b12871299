#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "data/npy.hpp"
#include "data/predict_inputs.hpp"
#include "data_test_files.hpp"

using namespace gputrain;
using namespace gputrain::data;
using namespace data_test;

namespace {

std::string error_of(const std::string& path, const Shape& shape) {
    try {
        read_predict_inputs(path, shape, 1.0, 1.0);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("read_predict_inputs reads IDX, NPY and CSV with and without labels, scaled") {
    TempDir dir;
    write_idx(dir / "images-idx3-ubyte.gz", {2, 2, 2}, {0, 10, 20, 30, 40, 50, 60, 70});
    PredictInputs in = read_predict_inputs(dir / "images-idx3-ubyte.gz", {4}, 0.5, 0.5);
    REQUIRE(in.format == "idx");
    REQUIRE(in.rows == 2);
    REQUIRE(in.values == std::vector<float>{0, 5, 10, 15, 20, 25, 30, 35});
    REQUIRE(in.labels.empty());

    write_npy_float32(dir / "x.npy", {3, 2, 1}, {1, 2, 3, 4, 5, 6});
    in = read_predict_inputs(dir / "x.npy", {2}, 2.0, 2.0);
    REQUIRE(in.format == "npy");
    REQUIRE(in.rows == 3);
    REQUIRE(in.values == std::vector<float>{2, 4, 6, 8, 10, 12});

    write_text(dir / "labeled.csv", "label,a,b\n3,1,2\n0,4,8\n");
    in = read_predict_inputs(dir / "labeled.csv", {2}, 0.25, 0.25);
    REQUIRE(in.format == "csv");
    REQUIRE(in.rows == 2);
    REQUIRE(in.labels == std::vector<int32_t>{3, 0});
    REQUIRE(in.values == std::vector<float>{0.25f, 0.5f, 1, 2});

    write_text(dir / "unlabeled.csv", "a,b\n1.5,2\n4,8\n-1,0\n");
    in = read_predict_inputs(dir / "unlabeled.csv", {2}, 1.0, 1.0);
    REQUIRE(in.rows == 3);
    REQUIRE(in.labels.empty());
    REQUIRE(in.values == std::vector<float>{1.5f, 2, 4, 8, -1, 0});
}

TEST_CASE("read_predict_inputs rejects samples that do not fit the model") {
    TempDir dir;
    write_npy_float32(dir / "x.npy", {3, 5}, std::vector<float>(15, 1.0f));
    REQUIRE(error_of(dir / "x.npy", {2, 2}) ==
            dir / "x.npy" + ": the array's shape [3, 5] does not hold samples of model.input_shape [2, 2]; "
                            "expected [N, 4] or [N] + model.input_shape");
    write_npy_float32(dir / "flat.npy", {4}, std::vector<float>(4, 1.0f));
    REQUIRE(read_predict_inputs(dir / "flat.npy", {1}, 1.0, 1.0).rows == 4);  // N samples of one value
    REQUIRE(error_of(dir / "flat.npy", {4}) ==
            dir / "flat.npy" + ": the array's shape [4] does not hold samples of model.input_shape [4]; "
                               "expected [N, 4] or [N] + model.input_shape");
    write_npy_float32(dir / "none.npy", {0, 4}, {});
    REQUIRE(error_of(dir / "none.npy", {4}) == dir / "none.npy" + ": holds no samples");
    write_idx(dir / "images-idx3-ubyte", {1, 3, 3}, std::vector<uint8_t>(9, 0));
    REQUIRE(error_of(dir / "images-idx3-ubyte", {8}) ==
            dir / "images-idx3-ubyte" + ": the IDX file's shape [1, 3, 3] does not hold samples of "
                                        "model.input_shape [8]; expected [N, 8] or [N] + model.input_shape");
    write_text(dir / "wide.csv", "1,2,3,4\n");
    REQUIRE(error_of(dir / "wide.csv", {2}) ==
            dir / "wide.csv" + ": 4 columns, but model.input_shape [2] needs 2 (the features) or 3 (a label, then the features)");
    REQUIRE(error_of(dir / "nothing.csv", {2}) == dir / "nothing.csv" + ": no such file");
}

TEST_CASE("read_predict_inputs takes samples laid out as model.input_shape or flat, not another layout") {
    TempDir dir;
    std::vector<float> values(2 * 98);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
    // Channels first for a channels-last model: the same count, the wrong order.
    write_npy_float32(dir / "nchw.npy", {2, 2, 7, 7}, values);
    REQUIRE(error_of(dir / "nchw.npy", {7, 7, 2}) ==
            dir / "nchw.npy" + ": the array's shape [2, 2, 7, 7] holds 98 values a sample, but not laid out as "
                               "model.input_shape [7, 7, 2] (channels last, as training reads them); reshape or "
                               "transpose it: expected [N, 98] or [N] + model.input_shape");
    write_npy_float32(dir / "wide.npy", {2, 14, 7}, values);
    REQUIRE(error_of(dir / "wide.npy", {7, 14}) ==
            dir / "wide.npy" + ": the array's shape [2, 14, 7] holds 98 values a sample, but not laid out as "
                               "model.input_shape [7, 14] (channels last, as training reads them); reshape or "
                               "transpose it: expected [N, 98] or [N] + model.input_shape");
    // As the model, up to axes of 1 (IDX images for a [28, 28, 1] CNN), or flat on either side.
    for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{
             {2, 7, 7, 2}, {2, 98}, {2, 7, 1, 7, 2}, {2, 1, 98}}) {
        write_npy_float32(dir / "ok.npy", dims, values);
        const PredictInputs in = read_predict_inputs(dir / "ok.npy", {7, 7, 2}, 1.0, 1.0);
        REQUIRE(in.rows == 2);
        REQUIRE(in.values == values);
    }
    write_npy_float32(dir / "images.npy", {2, 7, 14}, values);
    REQUIRE(read_predict_inputs(dir / "images.npy", {7, 14, 1}, 1.0, 1.0).rows == 2);
    REQUIRE(read_predict_inputs(dir / "images.npy", {98}, 1.0, 1.0).rows == 2);
    // IDX images as training reads them: by count, whatever the model's shape.
    std::vector<uint8_t> bytes(2 * 98, 7);
    write_idx(dir / "images-idx3-ubyte", {2, 14, 7}, bytes);
    REQUIRE(read_predict_inputs(dir / "images-idx3-ubyte", {7, 14}, 1.0, 1.0).rows == 2);
}
