#include <catch2/catch.hpp>

#include <tuple>

#include <cstdio>
#include <fstream>

#include "load_helpers.hpp"

using namespace gputrain::config;
using namespace gputrain::config::testing;

namespace {

const std::string kFull = R"(run_dir: runs/full
model:
  input_shape: [28, 28]
  layers:
    - type: flatten
    - {type: dense, name: hidden, units: 128, activation: relu}
    - type: dropout
      rate: 0.2
    - {type: conv2d, kernel_size: [3, 3]}
    - {type: dense, units: 10, activation: softmax}
loss: {name: categorical_crossentropy, from_logits: true}
metrics: [accuracy, loss]
optimizer:
  type: sgd
  learning_rate: 0.05
  momentum: 0.9
  nesterov: true
  schedule: {type: step_decay, decay_rate: 0.5, decay_epochs: 3, warmup_epochs: 1}
data:
  path: /data/fashion
  format: csv
  scale: 0.5
  validation_split: 0.1
  limit: 1000
  test_limit: 200
training: {epochs: 12, batch_size: 64, shuffle: false, seed: 7}
strategy: {type: mirrored, devices: [0, 1], replicas: 0}
checkpoint: {dir: ckpt, every_epochs: 2, keep_last: 0, save_best: false, monitor: val_accuracy, mode: max}
logging: {level: debug, progress: lines, metrics_file: "", every_steps: 25}
)";

}  // namespace

TEST_CASE("a full config parses to the expected structs") {
    const RunConfig c = load_text(kFull);
    CHECK(c.source_file == "cfg.yaml");
    CHECK(c.run_dir == "runs/full");
    CHECK(c.model.input_shape == gputrain::Shape{28, 28});
    REQUIRE(c.model.layers.size() == 5);
    CHECK(c.model.layers[0].type == "flatten");
    CHECK(c.model.layers[0].params.empty());
    const LayerSpec& hidden = c.model.layers[1];
    CHECK(hidden.type == "dense");
    CHECK(hidden.name == "hidden");
    CHECK(hidden.params == std::map<std::string, std::string>{{"units", "128"}, {"activation", "relu"}});
    CHECK(c.model.layers[2].params.at("rate") == "0.2");
    CHECK(c.model.layers[3].params.at("kernel_size") == "3,3");
    CHECK(c.loss.name == LossKind::categorical_crossentropy);
    CHECK(c.loss.from_logits);
    CHECK(c.metrics == std::vector<std::string>{"accuracy", "loss"});
    CHECK(c.optimizer.type == OptimizerType::sgd);
    CHECK(c.optimizer.learning_rate == 0.05);
    CHECK(c.optimizer.momentum == 0.9);
    CHECK(c.optimizer.nesterov);
    CHECK(c.optimizer.schedule.type == ScheduleType::step_decay);
    CHECK(c.optimizer.schedule.decay_rate == 0.5);
    CHECK(c.optimizer.schedule.decay_epochs == 3);
    CHECK(c.optimizer.schedule.warmup_epochs == 1);
    CHECK(c.data.dataset.empty());
    CHECK(c.data.path == "/data/fashion");
    CHECK(c.data.format == DataFormat::csv);
    CHECK(c.data.scale == 0.5);
    CHECK(c.data.validation_split == 0.1);
    CHECK(c.data.limit == 1000);
    CHECK(c.data.test_limit == 200);
    CHECK(c.training.epochs == 12);
    CHECK(c.training.batch_size == 64);
    CHECK_FALSE(c.training.shuffle);
    CHECK(c.training.seed == 7);
    CHECK(c.strategy.type == StrategyType::mirrored);
    CHECK(c.strategy.devices == "0,1");
    CHECK(c.checkpoint.dir == "ckpt");
    CHECK(c.checkpoint.every_epochs == 2);
    CHECK(c.checkpoint.keep_last == 0);
    CHECK_FALSE(c.checkpoint.save_best);
    CHECK(c.checkpoint.monitor == Monitor::val_accuracy);
    CHECK(c.checkpoint.mode == MonitorMode::max);
    CHECK(c.logging.level == LogLevel::debug);
    CHECK(c.logging.progress == ProgressStyle::lines);
    CHECK(c.logging.metrics_file.empty());
    CHECK(c.logging.every_steps == 25);
    CHECK(c.digest.size() == 16);
}

TEST_CASE("layer keys keep their places, the layer itself under the empty key") {
    const RunConfig c = load_text(kFull);
    const LayerSpec& hidden = c.model.layers[1];
    CHECK(hidden.where.at("") == "cfg.yaml:6:7");
    CHECK(hidden.where.at("type") == "cfg.yaml:6:8");
    CHECK(hidden.where.at("name") == "cfg.yaml:6:21");
    CHECK(hidden.where.at("units") == "cfg.yaml:6:35");
    CHECK(c.model.layers[2].where.at("") == "cfg.yaml:7:7");
    CHECK(c.model.layers[2].where.at("rate") == "cfg.yaml:8:7");
}

TEST_CASE("left-out keys get the documented defaults") {
    const RunConfig c = load_text(kMinimal);
    const RunConfig d;  // run_config.hpp's defaults
    CHECK(c.run_dir == "runs/default");
    CHECK(c.loss.name == LossKind::sparse_categorical_crossentropy);
    CHECK_FALSE(c.loss.from_logits);
    CHECK(c.metrics == std::vector<std::string>{"accuracy"});
    CHECK(c.optimizer.type == OptimizerType::adam);
    CHECK(c.optimizer.learning_rate == 0.001);
    CHECK(c.optimizer.weight_decay == 0);
    CHECK(c.optimizer.beta1 == 0.9);
    CHECK(c.optimizer.beta2 == 0.999);
    CHECK(c.optimizer.epsilon == 1e-7);
    CHECK(c.optimizer.schedule.type == ScheduleType::constant);
    CHECK(c.data.dataset == "fashion-mnist");
    CHECK(c.data.format == DataFormat::idx);
    CHECK(c.data.scale == 1.0 / 255.0);
    CHECK(c.data.validation_split == 0);
    CHECK(c.training.epochs == 5);
    CHECK(c.training.batch_size == 32);
    CHECK(c.training.shuffle);
    CHECK(c.training.seed == 42);
    CHECK(c.strategy.type == StrategyType::mirrored);
    CHECK(c.strategy.devices == "all");
    CHECK(c.strategy.replicas == 0);
    CHECK(c.checkpoint.dir.empty());
    CHECK(c.checkpoint.every_epochs == 1);
    CHECK(c.checkpoint.keep_last == 3);
    CHECK(c.checkpoint.save_best);
    CHECK(c.checkpoint.monitor == Monitor::val_loss);
    CHECK(c.checkpoint.mode == MonitorMode::automatic);
    CHECK(!c.early_stopping.enabled);
    CHECK(c.logging.level == LogLevel::info);
    CHECK(c.logging.progress == ProgressStyle::automatic);
    CHECK(c.logging.metrics_file == "metrics.csv");
    CHECK(c.logging.every_steps == 0);
    CHECK(c.data.synthetic_samples == d.data.synthetic_samples);
}

TEST_CASE("optimizer defaults follow the type") {
    CHECK(load_text(kMinimal + "optimizer: {type: sgd}\n").optimizer.learning_rate == 0.01);
    const RunConfig adamw = load_text(kMinimal + "optimizer: {type: adamw}\n");
    CHECK(adamw.optimizer.learning_rate == 0.001);
    CHECK(adamw.optimizer.weight_decay == 0.004);
    CHECK(load_text(kMinimal + "optimizer: {type: adamw, weight_decay: 0}\n").optimizer.weight_decay == 0);
    CHECK(load_text(kMinimal + "optimizer: {type: adam, weight_decay: 0}\n").optimizer.weight_decay == 0);
}

TEST_CASE("the short forms: loss as a name, one metric, empty sections") {
    const RunConfig c = load_text(kMinimal + "loss: mean_squared_error\nmetrics: loss\ntraining:\nlogging: {}\n");
    CHECK(c.loss.name == LossKind::mean_squared_error);
    CHECK(c.metrics == std::vector<std::string>{"loss"});
    CHECK(c.training.epochs == 5);
    CHECK(load_text(kMinimal + "metrics: []\n").metrics.empty());
    const std::string flat_model = "model:\n  input_shape: 784\n  layers: [{type: dense, units: 10}]\n";
    CHECK(load_text(flat_model + "data: {dataset: mnist}\n").model.input_shape == gputrain::Shape{784});
}

TEST_CASE("strategy.devices: all, cpu, one id, a list or its text") {
    const auto devices = [](const std::string& v) {
        return load_text(kMinimal + "strategy: {devices: " + v + "}\n").strategy.devices;
    };
    CHECK(devices("all") == "all");
    CHECK(devices("cpu") == "cpu");
    CHECK(devices("1") == "1");
    CHECK(devices("[2, 0]") == "2,0");
    CHECK(devices("'0, 3'") == "0,3");
}

TEST_CASE("synthetic data: dataset synthetic or format synthetic") {
    const std::string model = "model: {input_shape: [4], layers: [{type: dense, units: 3}]}\n";
    const RunConfig a = load_text(model + "data: {dataset: synthetic, synthetic: {samples: 100, classes: 3, seed: 9}}\n");
    CHECK(a.data.format == DataFormat::synthetic);
    CHECK(a.data.dataset == "synthetic");
    CHECK(a.data.synthetic_samples == 100);
    CHECK(a.data.synthetic_classes == 3);
    CHECK(a.data.synthetic_seed == 9);
    const RunConfig b = load_text(model + "data: {format: synthetic}\n");
    CHECK(b.data.format == DataFormat::synthetic);
    CHECK(b.data.dataset.empty());
}

TEST_CASE("load reads a file and names it in places") {
    const std::string path = "test_config_load_reads_a_file.yaml";
    std::ofstream(path) << kMinimal << "training: {epochs: 0}\n";
    try {
        load(path);
        FAIL("no error");
    } catch (const gputrain::ConfigError& e) {
        REQUIRE(std::string(e.what()) == path + ":3:20: training.epochs: expected a positive integer, got '0'");
    }
    std::ofstream(path) << kMinimal;
    CHECK(load(path).source_file == path);
    CHECK(load(path, {"training.epochs=3"}).training.epochs == 3);
    std::remove(path.c_str());
}

TEST_CASE("early_stopping: on with the section, Keras' defaults, true/false as a switch") {
    const RunConfig given = load_text(kMinimal + "early_stopping: {patience: 3, min_delta: 0.01, start_from_epoch: 2}\n");
    CHECK(given.early_stopping.enabled);
    CHECK(given.early_stopping.monitor == Monitor::val_loss);
    CHECK(given.early_stopping.patience == 3);
    CHECK(given.early_stopping.min_delta == 0.01);
    CHECK(given.early_stopping.mode == MonitorMode::automatic);
    CHECK(given.early_stopping.start_from_epoch == 2);
    const RunConfig keras = load_text(kMinimal + "early_stopping: {}\n");
    CHECK(keras.early_stopping.enabled);
    CHECK(keras.early_stopping.patience == 0);
    CHECK(load_text(kMinimal + "early_stopping: on\n").early_stopping.enabled);
    CHECK(!load_text(kMinimal + "early_stopping: {patience: 3}\n", {"early_stopping=false"}).early_stopping.enabled);
    CHECK(load_text(kMinimal, {"early_stopping.patience=2"}).early_stopping.patience == 2);
}

TEST_CASE("reduce_lr_on_plateau: on with the section, Keras' defaults") {
    const RunConfig keras = load_text(kMinimal + "reduce_lr_on_plateau: true\n");
    const ReduceLrOnPlateauConfig& p = keras.reduce_lr_on_plateau;
    CHECK(p.enabled);
    CHECK(std::tie(p.monitor, p.factor, p.patience, p.min_delta, p.cooldown, p.min_lr, p.mode) ==
          std::make_tuple(Monitor::val_loss, 0.1, int64_t{10}, 1e-4, int64_t{0}, 0.0, MonitorMode::automatic));
    const RunConfig given = load_text(kMinimal + "reduce_lr_on_plateau: {factor: 0.5, patience: 2, cooldown: 1, min_lr: 1e-5}\n");
    CHECK(given.reduce_lr_on_plateau.factor == 0.5);
    CHECK(given.reduce_lr_on_plateau.cooldown == 1);
    CHECK(given.reduce_lr_on_plateau.min_lr == 1e-5);
    CHECK(!load_text(kMinimal).reduce_lr_on_plateau.enabled);
    CHECK(load_text(kMinimal + "optimizer: {schedule: {warmup_epochs: 2}}\nreduce_lr_on_plateau: true\n")
              .reduce_lr_on_plateau.enabled);
}
