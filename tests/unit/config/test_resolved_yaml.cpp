// resolved_yaml reads back to the same RunConfig; the digest ignores epochs only.
#include <catch2/catch.hpp>

#include "config/resolved_yaml.hpp"
#include "load_helpers.hpp"

using namespace gputrain::config;
using namespace gputrain::config::testing;

namespace {

// Every field, except `where` and source_file, which name places in the text read.
void require_same(const RunConfig& a, const RunConfig& b) {
    CHECK(a.run_dir == b.run_dir);
    CHECK(a.model.input_shape == b.model.input_shape);
    REQUIRE(a.model.layers.size() == b.model.layers.size());
    for (size_t i = 0; i < a.model.layers.size(); ++i) {
        CHECK(a.model.layers[i].type == b.model.layers[i].type);
        CHECK(a.model.layers[i].name == b.model.layers[i].name);
        CHECK(a.model.layers[i].params == b.model.layers[i].params);
    }
    CHECK(a.loss.name == b.loss.name);
    CHECK(a.loss.from_logits == b.loss.from_logits);
    CHECK(a.metrics == b.metrics);
    const OptimizerConfig &o = a.optimizer, &p = b.optimizer;
    CHECK(std::tie(o.type, o.learning_rate, o.momentum, o.nesterov, o.beta1, o.beta2, o.epsilon, o.weight_decay) ==
          std::tie(p.type, p.learning_rate, p.momentum, p.nesterov, p.beta1, p.beta2, p.epsilon, p.weight_decay));
    const ScheduleConfig &s = o.schedule, &t = p.schedule;
    CHECK(std::tie(s.type, s.decay_rate, s.decay_epochs, s.decay_steps, s.staircase, s.min_lr, s.warmup_epochs) ==
          std::tie(t.type, t.decay_rate, t.decay_epochs, t.decay_steps, t.staircase, t.min_lr, t.warmup_epochs));
    const DataConfig &d = a.data, &e = b.data;
    CHECK(std::tie(d.dataset, d.path, d.format, d.scale, d.validation_split, d.limit, d.test_limit,
                   d.synthetic_samples, d.synthetic_classes, d.synthetic_seed) ==
          std::tie(e.dataset, e.path, e.format, e.scale, e.validation_split, e.limit, e.test_limit,
                   e.synthetic_samples, e.synthetic_classes, e.synthetic_seed));
    CHECK(std::tie(a.training.epochs, a.training.batch_size, a.training.shuffle, a.training.seed) ==
          std::tie(b.training.epochs, b.training.batch_size, b.training.shuffle, b.training.seed));
    CHECK(std::tie(a.strategy.type, a.strategy.devices, a.strategy.replicas, a.strategy.timeout_seconds) ==
          std::tie(b.strategy.type, b.strategy.devices, b.strategy.replicas, b.strategy.timeout_seconds));
    const CheckpointConfig &c = a.checkpoint, &k = b.checkpoint;
    CHECK(std::tie(c.dir, c.every_epochs, c.keep_last, c.save_best, c.monitor, c.mode) ==
          std::tie(k.dir, k.every_epochs, k.keep_last, k.save_best, k.monitor, k.mode));
    const EarlyStoppingConfig &e1 = a.early_stopping, &e2 = b.early_stopping;
    CHECK(std::tie(e1.enabled, e1.monitor, e1.patience, e1.min_delta, e1.mode, e1.start_from_epoch) ==
          std::tie(e2.enabled, e2.monitor, e2.patience, e2.min_delta, e2.mode, e2.start_from_epoch));
    const ReduceLrOnPlateauConfig &p1 = a.reduce_lr_on_plateau, &p2 = b.reduce_lr_on_plateau;
    CHECK(std::tie(p1.enabled, p1.monitor, p1.factor, p1.patience, p1.min_delta, p1.cooldown, p1.min_lr, p1.mode) ==
          std::tie(p2.enabled, p2.monitor, p2.factor, p2.patience, p2.min_delta, p2.cooldown, p2.min_lr, p2.mode));
    CHECK(std::tie(a.logging.level, a.logging.progress, a.logging.metrics_file, a.logging.tensorboard,
                   a.logging.every_steps) ==
          std::tie(b.logging.level, b.logging.progress, b.logging.metrics_file, b.logging.tensorboard,
                   b.logging.every_steps));
    CHECK(a.resolved_yaml == b.resolved_yaml);
    CHECK(a.digest == b.digest);
}

void require_round_trip(const RunConfig& original) {
    const RunConfig again = load_from_string(original.resolved_yaml, "resolved.yaml");
    require_same(original, again);
}

}  // namespace

TEST_CASE("resolved_yaml of the defaults reads back to the same config") {
    const RunConfig c = load_text(kMinimal);
    require_round_trip(c);
    CHECK(c.resolved_yaml.find("  layers:\n    - {type: flatten}\n    - {type: dense, activation: softmax, units: 10}\n") !=
          std::string::npos);
    CHECK(c.resolved_yaml.find("  learning_rate: 0.001\n") != std::string::npos);
    CHECK(c.resolved_yaml.find("  path: \"\"\n") != std::string::npos);
}

TEST_CASE("resolved_yaml round trip with every section set") {
    require_round_trip(load_text(
        "run_dir: 'runs/odd: name'\n"
        "model:\n"
        "  input_shape: [8, 8, 1]\n"
        "  layers:\n"
        "    - {type: conv2d, name: first, kernel_size: [3, 3], padding: same}\n"
        "    - {type: flatten}\n"
        "    - {type: dense, units: 10, note: 'a, b'}\n"
        "loss: {name: categorical_crossentropy, from_logits: true}\n"
        "metrics: [loss, accuracy]\n"
        "optimizer: {type: adamw, learning_rate: 3e-4, beta1: 0.8, epsilon: 1e-8, weight_decay: 0.1,\n"
        "            schedule: {type: cosine, min_lr: 1e-6, warmup_epochs: 2}}\n"
        "data: {path: /srv/data/x, format: csv, scale: 0.1, validation_split: 0.25, limit: 5, test_limit: 6}\n"
        "training: {epochs: 9, batch_size: 100, shuffle: off, seed: 18446744073709551615}\n"
        "strategy: {type: mirrored, devices: [3, 1]}\n"
        "checkpoint: {dir: 'null', every_epochs: 0, keep_last: 1, save_best: false, monitor: accuracy, mode: max}\n"
        "early_stopping: {monitor: val_accuracy, patience: 4, min_delta: 0.001, mode: max, start_from_epoch: 2}\n"
        "logging: {level: trace, progress: none, metrics_file: '', tensorboard: true, every_steps: 7}\n"));
    require_round_trip(load_text(kMinimal + "early_stopping: true\n"));
    require_round_trip(load_text(kMinimal + "reduce_lr_on_plateau: {monitor: loss, factor: 0.25, patience: 3, "
                                            "min_delta: 0, cooldown: 2, min_lr: 1e-6, mode: min}\n"));
    require_round_trip(load_text(kMinimal + "early_stopping: false\n"));
    require_round_trip(load_text(kModel + "data: {dataset: synthetic, synthetic: {samples: 64, classes: 4, seed: 3}}\n"
                                          "strategy: {type: one_device, devices: 2}\n"
                                          "optimizer: {type: sgd, momentum: 0.5, nesterov: true,\n"
                                          "  schedule: {type: exponential_decay, decay_rate: 0.5, decay_steps: 7, staircase: true}}\n"));
    require_round_trip(load_text(kModel + "data: {format: synthetic}\n"
                                          "strategy: {type: multi_worker_mirrored, devices: cpu, timeout_seconds: 7}\n"));
    require_round_trip(load_text(kModel + "data: {format: synthetic}\nstrategy: {devices: cpu, replicas: 3}\n"
                                          "optimizer: {schedule: {type: step_decay, decay_epochs: 4}}\n"));
}

TEST_CASE("the digest ignores training.epochs (and the speed-only keys) but not the rest") {
    const RunConfig base = load_text(kMinimal);
    CHECK(base.digest == config_digest(base));
    // Without training.epochs, and without the keys that change only speed
    // (strategy.bucket_mb, strategy.stall_warning_seconds, data.resident, data.workers, training.cuda_graphs, training.fused_kernels,
    // training.cast_gemm_inputs, training.gemm_epilogues, training.deterministic).
    std::string digested = resolved_yaml(base);
    for (const std::string key : {"  epochs: ", "  bucket_mb: ", "  stall_warning_seconds: ", "  resident: ", "  workers: ", "  cuda_graphs: ", "  fused_kernels: ",
                                  "  cast_gemm_inputs: ", "  gemm_epilogues: ", "  deterministic: "}) {
        const size_t at = digested.find(key);
        REQUIRE(at != std::string::npos);
        digested.erase(at, digested.find('\n', at) + 1 - at);
    }
    CHECK(base.digest == fnv1a64_hex(digested));
    CHECK(load_text(kMinimal, {"training.epochs=50"}).digest == base.digest);
    CHECK(load_text(kMinimal, {"training.epochs=50"}).resolved_yaml != base.resolved_yaml);
    CHECK(load_text(kMinimal, {"optimizer.learning_rate=0.002"}).digest != base.digest);
    CHECK(load_text(kMinimal, {"training.batch_size=64"}).digest != base.digest);
    CHECK(load_text(kMinimal, {"model.layers[1].units=11"}).digest != base.digest);
    CHECK(load_text(kMinimal, {"strategy.bucket_mb=0"}).digest == base.digest);
    CHECK(load_text(kMinimal, {"data.workers=3"}).digest == base.digest);
    // early_stopping decides how many epochs run, as training.epochs does.
    const RunConfig stopping = load_text(kMinimal + "early_stopping: {patience: 3}\n");
    CHECK(stopping.digest == base.digest);
    CHECK(stopping.resolved_yaml.find("early_stopping:\n  monitor: val_loss\n  patience: 3\n  min_delta: 0\n  mode: "
                                      "auto\n  start_from_epoch: 0\n") != std::string::npos);
    CHECK(base.resolved_yaml.find("early_stopping") == std::string::npos);
    // reduce_lr_on_plateau changes the rates trained with, as the schedule does: in the digest, when on.
    CHECK(load_text(kMinimal + "reduce_lr_on_plateau: true\n").digest != base.digest);
    CHECK(load_text(kMinimal + "reduce_lr_on_plateau: false\n").digest == base.digest);
    CHECK(load_text(kMinimal + "reduce_lr_on_plateau: {patience: 3}\n").digest !=
          load_text(kMinimal + "reduce_lr_on_plateau: {patience: 4}\n").digest);
}

TEST_CASE("data.sequence_stride: the window's length is the default (one digest); another stride is in the digest") {
    const std::string text = "model:\n  input_shape: [8]\n  layers:\n"
                             "    - {type: embedding, input_dim: 5, output_dim: 4}\n    - {type: dense, units: 5}\n"
                             "loss: {name: sparse_categorical_crossentropy, from_logits: true}\n"
                             "data: {path: t.txt, format: text}\n";
    const RunConfig base = load_text(text);
    CHECK(load_text(text, {"data.sequence_stride=8"}).digest == base.digest);
    CHECK(load_text(text, {"data.sequence_stride=8"}).resolved_yaml == base.resolved_yaml);
    const RunConfig strided = load_text(text, {"data.sequence_stride=1"});
    CHECK(strided.digest != base.digest);
    CHECK(strided.resolved_yaml.find("  sequence_stride: 1\n") != std::string::npos);
    require_round_trip(strided);
}

TEST_CASE("fnv1a64_hex is FNV-1a 64 in 16 hex digits") {
    CHECK(fnv1a64_hex("") == "cbf29ce484222325");
    CHECK(fnv1a64_hex("a") == "af63dc4c8601ec8c");
    CHECK(fnv1a64_hex("foobar") == "85944171f73967e8");
}
