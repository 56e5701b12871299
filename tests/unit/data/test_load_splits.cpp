#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "data/dataset.hpp"
#include "data/dataset_split.hpp"
#include "data_test_files.hpp"

using namespace gputrain;
using namespace gputrain::data;
using namespace data_test;

namespace {

// A data set's samples as the model reads them (bytes through the value table).
std::vector<float> floats(const Dataset& d) { return model_inputs(d, 0, d.size()); }


config::DataConfig path_config(const TempDir& dir, config::DataFormat format = config::DataFormat::idx) {
    config::DataConfig cfg;
    cfg.path = dir.path().string();
    cfg.format = format;
    return cfg;
}

}  // namespace

TEST_CASE("load_splits reads an IDX folder, scales bytes and counts classes") {
    TempDir dir;
    write_idx_split(dir.path().string(), "train", 20, 3, 2, 4);
    write_idx_split(dir.path().string(), "t10k", 6, 3, 2, 5, /*gz=*/false);
    const DataSplits s = load_splits(path_config(dir), {3, 2}, Need::both);
    REQUIRE(s.train.size() == 20);
    REQUIRE(s.test.size() == 6);
    REQUIRE(s.validation.size() == 0);
    REQUIRE(s.train.sample_shape == Shape{3, 2});
    REQUIRE(s.train.num_classes == 5);  // test's labels reach 4
    REQUIRE(s.test.num_classes == 5);
    REQUIRE(s.train.labels[7] == 3);
    REQUIRE(floats(s.train)[5 * 6 + 2] == Approx((5 * 7 + 2) / 255.0));
    REQUIRE(s.train.description == "data.path train (" + dir.path().string() + ")");

    const DataSplits train_only = load_splits(path_config(dir), {3, 2}, Need::train);
    REQUIRE(train_only.test.size() == 0);
    REQUIRE(train_only.train.num_classes == 4);
    // A model may view the samples in another shape with as many elements.
    REQUIRE(load_splits(path_config(dir), {6}, Need::test).test.sample_shape == Shape{6});
}

TEST_CASE("load_splits reports a model input shape that does not fit the data") {
    TempDir dir;
    write_idx_split(dir.path().string(), "train", 4, 32, 32, 2);
    REQUIRE_THROWS_MATCHES(load_splits(path_config(dir), {28, 28}, Need::train), ConfigError,
                           Catch::Message("model.input_shape [28, 28] does not match the data's sample shape [32, 32] (" +
                                          dir / "train-images-idx3-ubyte.gz" + ")"));
}

TEST_CASE("load_splits reports image/label count and dimension mismatches") {
    TempDir dir;
    write_idx_split(dir.path().string(), "train", 5, 2, 2, 2);
    write_idx(dir / "train-labels-idx1-ubyte.gz", {4}, {0, 1, 0, 1});
    REQUIRE_THROWS_MATCHES(load_splits(path_config(dir), {2, 2}, Need::train), DataError,
                           Catch::Message(dir / "train-labels-idx1-ubyte.gz" + ": 4 labels for 5 images in " +
                                          dir / "train-images-idx3-ubyte.gz"));
    write_idx(dir / "train-labels-idx1-ubyte.gz", {5, 1}, {0, 1, 0, 1, 0});
    REQUIRE_THROWS_MATCHES(load_splits(path_config(dir), {2, 2}, Need::train), DataError,
                           Catch::Message(dir / "train-labels-idx1-ubyte.gz" +
                                          ": expected 1 dimension (the label count), found 2"));
    write_idx(dir / "train-images-idx3-ubyte.gz", {5}, {0, 1, 0, 1, 0});
    REQUIRE_THROWS_MATCHES(load_splits(path_config(dir), {2, 2}, Need::train), DataError,
                           Catch::Message(dir / "train-images-idx3-ubyte.gz" +
                                          ": expected at least 2 dimensions (the count, then each sample's shape), found 1"));
    // Test files are only needed when asked for.
    REQUIRE_THROWS_MATCHES(load_splits(path_config(dir), {2, 2}, Need::test), DataError,
                           Catch::Message(dir.path().string() +
                                          ": no t10k-images-idx3-ubyte(.gz) found (the IDX files are listed in "
                                          "datasets/README.md)"));
}

TEST_CASE("data.limit, test_limit and validation_split take the first N and the last fraction") {
    TempDir dir;
    write_idx_split(dir.path().string(), "train", 50, 2, 2, 10);
    write_idx_split(dir.path().string(), "t10k", 30, 2, 2, 10);
    config::DataConfig cfg = path_config(dir);
    cfg.limit = 40;
    cfg.test_limit = 7;
    cfg.validation_split = 0.25;
    cfg.scale = 1.0;
    const DataSplits s = load_splits(cfg, {2, 2}, Need::both);
    REQUIRE(s.train.size() == 30);
    REQUIRE(s.validation.size() == 10);
    REQUIRE(s.test.size() == 7);
    REQUIRE(s.validation.labels[0] == 30 % 10);
    REQUIRE(floats(s.validation)[0] == static_cast<float>((30 * 7) % 256));
    REQUIRE(s.validation.num_classes == 10);
    REQUIRE(s.validation.description == "validation: the last 10 samples of " + s.train.description);

    // Keras's arithmetic: int(n * (1 - split)) training samples.
    Dataset d = s.test;
    const Dataset v = split_off_validation(d, 0.3);
    REQUIRE(d.size() == 4);
    REQUIRE(v.size() == 3);
    Dataset one = slice(s.test, 0, 1);
    REQUIRE_THROWS_AS(split_off_validation(one, 0.5), DataError);
    cfg.validation_split = 1.0;
    REQUIRE_THROWS_AS(load_splits(cfg, {2, 2}, Need::train), ConfigError);
}

TEST_CASE("load_splits reads train.csv and test.csv") {
    TempDir dir;
    write_text(dir / "train.csv", "label,a,b,c,d\n1,0,255,51,102\n0,1,2,3,4\n3,5,6,7,8\n");
    write_text(dir / "test.csv", "2,9,9,9,9\n");
    const DataSplits s = load_splits(path_config(dir, config::DataFormat::csv), {2, 2}, Need::both);
    REQUIRE(s.train.size() == 3);
    REQUIRE(s.train.sample_shape == Shape{2, 2});
    REQUIRE(s.train.num_classes == 4);
    REQUIRE(s.train.inputs[1] == Approx(1.0));
    REQUIRE(s.train.inputs[2] == Approx(0.2));
    REQUIRE(s.test.labels == std::vector<int32_t>{2});
    REQUIRE(load_splits(path_config(dir, config::DataFormat::csv), {}, Need::train).train.sample_shape == Shape{4});
    REQUIRE_THROWS_MATCHES(load_splits(path_config(dir, config::DataFormat::csv), {5}, Need::train), ConfigError,
                           Catch::Message("model.input_shape [5] does not match the data's sample shape [4] (" +
                                          dir / "train.csv" + ")"));
    write_text(dir / "test.csv", "2,9,9\n");
    REQUIRE_THROWS_MATCHES(load_splits(path_config(dir, config::DataFormat::csv), {4}, Need::both), ConfigError,
                           Catch::Message("model.input_shape [4] does not match the data's sample shape [2] (" +
                                          dir / "test.csv" + ")"));
}

TEST_CASE("synthetic data is deterministic, shaped like the model input and learnable") {
    config::DataConfig cfg;
    cfg.dataset = "synthetic";
    cfg.synthetic_samples = 400;
    cfg.synthetic_classes = 3;
    const DataSplits a = load_splits(cfg, {4, 5}, Need::both);
    const DataSplits b = load_splits(cfg, {4, 5}, Need::both);
    REQUIRE(a.train.size() == 400);
    REQUIRE(a.test.size() == 100);
    REQUIRE(a.train.sample_shape == Shape{4, 5});
    REQUIRE(a.train.num_classes == 3);
    REQUIRE(floats(a.train) == floats(b.train));
    REQUIRE(a.train.labels == b.train.labels);
    REQUIRE(a.test.pixels != std::vector<uint8_t>(a.train.pixels.begin(), a.train.pixels.begin() + 100 * 20));
    for (float v : floats(a.train)) REQUIRE((v >= 0.0f && v <= 1.0f));
    for (int32_t label : a.train.labels) REQUIRE((label >= 0 && label < 3));

    cfg.synthetic_seed = 2;
    REQUIRE(load_splits(cfg, {4, 5}, Need::train).train.pixels != a.train.pixels);

    // Nearest class mean (estimated on train) classifies test well above chance.
    const std::vector<float> train_x = floats(a.train), test_x = floats(a.test);
    std::vector<double> means(3 * 20, 0.0);
    std::vector<int> counts(3, 0);
    for (int64_t i = 0; i < a.train.size(); ++i) {
        ++counts[a.train.labels[i]];
        for (int e = 0; e < 20; ++e) means[a.train.labels[i] * 20 + e] += train_x[i * 20 + e];
    }
    for (int c = 0; c < 3; ++c) {
        for (int e = 0; e < 20; ++e) means[c * 20 + e] /= std::max(1, counts[c]);
    }
    int correct = 0;
    for (int64_t i = 0; i < a.test.size(); ++i) {
        int best = 0;
        double best_distance = 1e30;
        for (int c = 0; c < 3; ++c) {
            double distance = 0;
            for (int e = 0; e < 20; ++e) distance += std::pow(test_x[i * 20 + e] - means[c * 20 + e], 2);
            if (distance < best_distance) best_distance = distance, best = c;
        }
        correct += best == a.test.labels[i];
    }
    REQUIRE(correct >= 90);

    REQUIRE_THROWS_AS(load_splits(cfg, {}, Need::train), ConfigError);
}

TEST_CASE("load_splits rejects inconsistent data settings") {
    config::DataConfig cfg;
    REQUIRE_THROWS_AS(load_splits(cfg, {2}, Need::train), ConfigError);  // neither dataset nor path
    cfg.dataset = std::string("fashion-mnist");
    cfg.path = "/tmp";
    REQUIRE_THROWS_AS(load_splits(cfg, {2}, Need::train), ConfigError);  // both
}

TEST_CASE("the installed fashion-mnist loads with its known sizes") {
    if (!fs::exists("/usr/share/datasets/fashion-mnist")) {
        WARN("skipped: /usr/share/datasets/fashion-mnist is not installed (apt-get install dataset-fashion-mnist)");
        return;
    }
    config::DataConfig cfg;
    cfg.path = "/usr/share/datasets/fashion-mnist";
    const DataSplits s = load_splits(cfg, {28, 28}, Need::both);
    REQUIRE(s.train.size() == 60000);
    REQUIRE(s.test.size() == 10000);
    REQUIRE(s.train.num_classes == 10);
    REQUIRE(s.train.sample_shape == Shape{28, 28});
    for (float v : {floats(s.train).front(), floats(s.train).back()}) REQUIRE((v >= 0.0f && v <= 1.0f));
}

TEST_CASE("synthetic data larger than the memory left is refused before it is made") {
    config::DataConfig cfg;
    cfg.dataset = "synthetic";
    cfg.synthetic_samples = 160;  // 160 x 1e8 values (bytes) and 100 x 1e8 class means (floats): 56 GB
    cfg.synthetic_classes = 100;
    const size_t need = size_t{100} * 100000000 * sizeof(float) + size_t{160} * 100000000;
    if (host_memory_available() >= need) {
        WARN("this machine has " << human_bytes(host_memory_available()) << " free: not tried");
        return;
    }
    REQUIRE_THROWS_WITH(load_splits(cfg, {100000000}, Need::train),
                        Catch::StartsWith("data.synthetic: 160 training samples of (100000000) and their class means "
                                          "take 52.2 GiB, but ") &&
                            Catch::EndsWith(" is available (MemAvailable + SwapFree, within any cgroup or ulimit -v limit); use fewer data.synthetic.samples "
                                            "or a smaller model.input_shape"));
}
