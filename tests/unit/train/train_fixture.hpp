// A small classification job built in code: a config, a learnable data set,
// replicas on the CPU, and a temporary run folder.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "../nn/model_specs.hpp"
#include "checkpoint/safetensors.hpp"
#include "core/rng.hpp"
#include "data/dataset.hpp"
#include "train/strategy.hpp"
#include "train/trainer.hpp"

namespace fixture {

using namespace gputrain;

inline config::RunConfig small_job(int64_t epochs, int64_t batch,
                                   config::OptimizerType optimizer = config::OptimizerType::adam) {
    config::RunConfig cfg;
    cfg.model.input_shape = {6};
    cfg.model.layers = {specs::layer("dense", {{"units", "16"}, {"activation", "relu"}}),
                        specs::layer("dropout", {{"rate", "0.25"}}),
                        specs::layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    cfg.optimizer.type = optimizer;
    const bool sgd = optimizer == config::OptimizerType::sgd;
    cfg.optimizer.learning_rate = sgd ? 0.05 : 0.01;
    cfg.optimizer.momentum = sgd ? 0.9 : 0.0;
    if (optimizer == config::OptimizerType::rmsprop) {  // every slot it has: mean square, momentum, mean gradient
        cfg.optimizer.momentum = 0.5;
        cfg.optimizer.centered = true;
    }
    cfg.training.epochs = epochs;
    cfg.training.batch_size = batch;
    cfg.training.seed = 5;
    cfg.checkpoint.keep_last = 0;
    cfg.checkpoint.monitor = config::Monitor::loss;
    cfg.logging.metrics_file = "metrics.csv";
    cfg.digest = "test-digest";
    return cfg;
}

// Four dense layers (224, 528, 136 and 27 parameters) and a dropout without
// any: several buckets of gradients, a layer that skips them.
inline config::RunConfig deep_job(int64_t batch) {
    using specs::layer;
    auto cfg = small_job(2, batch);
    cfg.model.layers = {layer("dense", {{"units", "32"}, {"activation", "relu"}}),
                        layer("dropout", {{"rate", "0.25"}}),
                        layer("dense", {{"units", "16"}, {"activation", "relu"}}),
                        layer("dense", {{"units", "8"}, {"activation", "relu"}}),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    return cfg;
}

// A layer that reads the named tensors ("input" = the model's input).
inline config::LayerSpec reading(config::LayerSpec spec, std::vector<std::string> inputs) {
    for (auto& name : inputs) spec.inputs.push_back({std::move(name)});
    return spec;
}

// A graph: the 6 features as a 3x2 image -> conv2d -> a residual block
// (conv, batch norm, relu, conv, batch norm, add) -> a concatenation with a
// 1x1 conv of the input -> pooling -> dense. Fan-out at 'stem' and 'input'.
inline config::RunConfig residual_job(int64_t batch, const std::string& sync) {
    using specs::layer;
    auto cfg = small_job(2, batch);
    cfg.model.input_shape = {3, 2, 1};
    const auto conv = [](const std::string& filters, const std::string& name) {
        return layer("conv2d", {{"filters", filters}, {"kernel_size", "2"}, {"padding", "same"}, {"use_bias", "false"}},
                     name);
    };
    cfg.model.layers = {conv("4", "stem"),
                        layer("batch_norm", {{"sync", sync}}, "bn1"),
                        layer("relu"),
                        conv("4", "c2"),
                        layer("batch_norm", {{"sync", sync}}, "bn2"),
                        reading(layer("add", {}, "sum"), {"bn2", "stem"}),
                        layer("relu", {}, "out1"),
                        reading(layer("conv2d", {{"filters", "2"}, {"kernel_size", "1"}}, "side"), {"input"}),
                        reading(layer("concatenate"), {"out1", "side"}),
                        layer("max_pool2d", {{"pool_size", "2,1"}, {"padding", "same"}}),
                        layer("flatten"),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    return cfg;
}

// Three Gaussian blobs in 6-D; `n` samples.
inline data::Dataset blobs(int64_t n, uint64_t seed) {
    data::Dataset d;
    d.sample_shape = {6};
    d.num_classes = 3;
    Rng rng(seed);
    for (int64_t i = 0; i < n; ++i) {
        const int label = static_cast<int>(rng.below(3));
        d.labels.push_back(label);
        for (int k = 0; k < 6; ++k) d.inputs.push_back((k % 3 == label ? 1.0f : 0.0f) + 0.8f * (rng.uniform() - 0.5f));
    }
    return d;
}

// A NaN found late: 32 blobs with a NaN in sample 20 (step 3 of 4 at batch
// 8, unshuffled), the same data cut to the 16 samples of the 2 steps before
// it, and a job that reads the NaN tally only at the epoch's last step.
struct LateNan {
    data::DataSplits poisoned, first_two;
    config::RunConfig cfg;
};
inline LateNan late_nan() {
    LateNan t;
    t.poisoned.train = blobs(32, 3);
    t.poisoned.train.inputs[6 * 20 + 2] = std::nanf("");
    t.first_two.train = t.poisoned.train;
    t.first_two.train.inputs.resize(6 * 16);
    t.first_two.train.labels.resize(16);
    t.cfg = small_job(1, 8);
    t.cfg.training.shuffle = false;
    t.cfg.logging.every_steps = 4;
    return t;
}

// Trains late_nan()'s job on replicas from make() (a callable returning
// replicas for a config): the poisoned set must stop with the error naming
// step 3, and leave the weights (params(replica)) of a run on the 2 clean steps.
// Returns the replicas that stopped.
template <class MakeReplicas, class Params>
std::vector<std::unique_ptr<train::Replica>> check_late_nan_stop(const MakeReplicas& make, const Params& params);

inline std::vector<std::unique_ptr<train::Replica>> replicas(const config::RunConfig& cfg, int n) {
    device::Discovery found;
    found.cpu.logical_cores = 1;
    train::Strategy strategy(cfg, found, {"cpu", n});
    return strategy.make_replicas(cfg, cfg.training.batch_size);
}

inline std::vector<float> params_of(train::Replica& r) {
    return std::vector<float>(r.model().param_data(), r.model().param_data() + r.model().param_count());
}

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        static int counter = 0;
        path = std::filesystem::temp_directory_path() /
               ("gputrain-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

inline train::FitResult fit(const config::RunConfig& cfg, std::vector<std::unique_ptr<train::Replica>>& reps,
                            const data::DataSplits& data, const std::string& dir, const std::string& resume = "") {
    train::FitOptions options;
    options.run_dir = dir;
    options.resume_from = resume;
    options.progress = train::ProgressMode::none;
    train::Trainer trainer(cfg, reps, data, options);
    return trainer.fit();
}

// Writes `contents` (a checkpoint loaded and changed: its metadata, its tensors' values) to `path`.
inline void save_contents(const checkpoint::Contents& contents, const std::string& path) {
    std::vector<checkpoint::TensorRef> refs;
    for (const auto& t : contents.tensors) refs.push_back({t.name, t.shape, t.data.data()});
    checkpoint::save(path, refs, contents.metadata);
}

// max |a - b| / max |a|
inline double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
        scale = std::max(scale, static_cast<double>(std::abs(a[i])));
    }
    return diff / scale;
}

template <class MakeReplicas, class Params>
std::vector<std::unique_ptr<train::Replica>> check_late_nan_stop(const MakeReplicas& make, const Params& params) {
    const auto t = late_nan();
    TempDir dir, dir2;
    auto stopped = make(t.cfg);
    REQUIRE_THROWS_WITH(fit(t.cfg, stopped, t.poisoned, dir.path.string()),
                        Catch::StartsWith("training diverged: NaN or Inf in the gradients at epoch 1, step 3/4;"));
    auto clean = make(t.cfg);
    fit(t.cfg, clean, t.first_two, dir2.path.string());
    REQUIRE(params(*stopped[0]) == params(*clean[0]));
    return stopped;
}

}  // namespace fixture
