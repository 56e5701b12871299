// Rules between keys: each key used only by some kinds, dataset vs path,
// devices vs strategy, the checkpoint monitor vs the metrics.
#include <catch2/catch.hpp>

#include "load_helpers.hpp"

using namespace gputrain::config;
using namespace gputrain::config::testing;

TEST_CASE("weight_decay must be 0 unless the optimizer is adamw") {
    REQUIRE(error_of(kMinimal + "optimizer: {type: adam, weight_decay: 0.01}\n") ==
            "cfg.yaml:3:39: optimizer.weight_decay: must be 0 for adam, got 0.01; use type: adamw for weight decay");
    REQUIRE(error_of(kMinimal + "optimizer: {type: sgd, weight_decay: 1e-4}\n") ==
            "cfg.yaml:3:38: optimizer.weight_decay: must be 0 for sgd, got 1e-04; use type: adamw for weight decay");
    CHECK(load_text(kMinimal + "optimizer: {type: adamw, weight_decay: 0.01}\n").optimizer.weight_decay == 0.01);
}

TEST_CASE("optimizer keys of another optimizer are errors unless left at their defaults") {
    REQUIRE(error_of(kMinimal + "optimizer: {momentum: 0.9}\n") ==
            "cfg.yaml:3:23: optimizer.momentum: only used by sgd and rmsprop, not adam; remove it or use type: sgd or rmsprop");
    REQUIRE(error_of(kMinimal + "optimizer: {type: adamw, nesterov: true}\n") ==
            "cfg.yaml:3:36: optimizer.nesterov: only used by sgd, not adamw; remove it or use type: sgd");
    REQUIRE(error_of(kMinimal + "optimizer: {type: sgd, beta1: 0.8}\n") ==
            "cfg.yaml:3:31: optimizer.beta1: only used by adam and adamw, not sgd; remove it or use type: adam");
    REQUIRE(error_of(kMinimal + "optimizer: {type: sgd, nesterov: true}\n") ==
            "cfg.yaml:3:34: optimizer.nesterov: needs momentum > 0; set optimizer.momentum, e.g. 0.9");
    REQUIRE(error_of(kMinimal + "optimizer: {type: sgd, momentum: 1}\n") ==
            "cfg.yaml:3:34: optimizer.momentum: expected a number in [0, 1), got '1'");
    CHECK(load_text(kMinimal + "optimizer: {type: sgd, beta1: 0.9, momentum: 0.9}\n").optimizer.momentum == 0.9);
}

TEST_CASE("schedule keys of another schedule are errors") {
    REQUIRE(error_of(kMinimal + "optimizer: {schedule: {decay_rate: 0.5}}\n") ==
            "cfg.yaml:3:36: optimizer.schedule.decay_rate: only used by step_decay and exponential_decay, not "
            "constant schedule; remove it or change optimizer.schedule.type");
    REQUIRE(error_of(kMinimal + "optimizer: {schedule: {type: cosine, decay_steps: 10}}\n") ==
            "cfg.yaml:3:51: optimizer.schedule.decay_steps: only used by exponential_decay, not cosine schedule; "
            "remove it or change optimizer.schedule.type");
    REQUIRE(error_of(kMinimal + "optimizer: {schedule: {type: step_decay, min_lr: 0.0001}}\n") ==
            "cfg.yaml:3:50: optimizer.schedule.min_lr: only used by cosine, linear and one_cycle, not step_decay schedule; "
            "remove it or change optimizer.schedule.type");
    REQUIRE(error_of(kMinimal + "optimizer: {learning_rate: 0.01, schedule: {type: cosine, min_lr: 0.01}}\n") ==
            "cfg.yaml:3:67: optimizer.schedule.min_lr: must be below optimizer.learning_rate (0.01), got 0.01");
    const RunConfig c = load_text(
        kMinimal + "optimizer: {schedule: {type: exponential_decay, decay_rate: 0.9, decay_steps: 100, staircase: yes}}\n");
    CHECK(c.optimizer.schedule.decay_steps == 100);
    CHECK(c.optimizer.schedule.staircase);
}

TEST_CASE("data: exactly one of dataset and path, unless synthetic") {
    REQUIRE(error_of(kModel + "data: {dataset: mnist, path: /d}\n") ==
            "cfg.yaml:2:30: data.path: give data.dataset or data.path, not both; remove one");
    REQUIRE(error_of(kModel + "data: {limit: 10}\n") ==
            "cfg.yaml:2:7: data: no data set given; give data.dataset: NAME (e.g. fashion-mnist), data.path: DIR "
            "or dataset: synthetic");
    REQUIRE(error_of(kModel) ==
            "cfg.yaml:1:1: data: no data set given; give data.dataset: NAME (e.g. fashion-mnist), data.path: DIR "
            "or dataset: synthetic");
    REQUIRE(error_of(kModel + "data: {dataset: synthetic, format: idx}\n") ==
            "cfg.yaml:2:36: data.format: dataset synthetic needs format synthetic, got idx; remove data.format");
    REQUIRE(error_of(kModel + "data: {dataset: mnist, format: synthetic}\n") ==
            "cfg.yaml:2:17: data.dataset: not used with format synthetic; remove it, or remove format: synthetic "
            "to read 'mnist'");
    REQUIRE(error_of(kModel + "data: {format: synthetic, path: /d}\n") ==
            "cfg.yaml:2:33: data.path: not used with synthetic data; remove it");
    REQUIRE(error_of(kModel + "data: {dataset: synthetic, synthetic: {classes: 1}}\n") ==
            "cfg.yaml:2:49: data.synthetic.classes: expected at least 2 classes, got 1");
    REQUIRE(error_of(kModel + "data: {dataset: mnist, synthetic: {samples: 10}}\n") ==
            "cfg.yaml:2:45: data.synthetic.samples: only used by synthetic data, not idx data; remove it or use "
            "dataset: synthetic");
}

TEST_CASE("strategy: one_device is one device; replicas are CPU threads") {
    REQUIRE(error_of(kMinimal + "strategy: {type: one_device, devices: [0, 1]}\n") ==
            "cfg.yaml:3:39: strategy.devices: one_device uses one device, got 2 (0,1); use type: mirrored or list "
            "one GPU");
    REQUIRE(error_of(kMinimal + "strategy: {type: one_device, replicas: 4}\n") ==
            "cfg.yaml:3:40: strategy.replicas: one_device runs one replica, got 4; use type: mirrored");
    REQUIRE(error_of(kMinimal + "strategy: {devices: [0, 1], replicas: 2}\n") ==
            "cfg.yaml:3:39: strategy.replicas: only used by CPU replicas, not GPUs 0,1; remove it or use devices: cpu");
    CHECK(load_text(kMinimal + "strategy: {devices: cpu, replicas: 4}\n").strategy.replicas == 4);
    // Each replica is a thread with a model copy: bounded, and none without samples.
    REQUIRE(error_of(kMinimal + "training: {batch_size: 2000}\nstrategy: {replicas: 1025}\n") ==
            "cfg.yaml:4:22: strategy.replicas: at most 1024 replicas, got 1025; use fewer; more replicas than CPU "
            "cores are slower anyway");
    CHECK(load_text(kMinimal + "training: {batch_size: 2000}\nstrategy: {replicas: 1024}\n").strategy.replicas == 1024);
    REQUIRE(error_of(kMinimal + "strategy: {replicas: 33}\n") ==
            "cfg.yaml:3:22: strategy.replicas: 33 replicas for a global batch of 32 leave some without samples; "
            "use at most training.batch_size replicas");
    CHECK(load_text(kMinimal + "strategy: {replicas: 32}\n").strategy.replicas == 32);
    REQUIRE(error_of(kMinimal + "strategy: {replicas_per_gpu: 1025}\n") ==
            "cfg.yaml:3:30: strategy.replicas_per_gpu: at most 1024, got 1025");
    CHECK(load_text(kMinimal + "strategy: {type: one_device, devices: [1]}\n").strategy.devices == "1");
}

TEST_CASE("checkpoint.monitor on accuracy needs the accuracy metric") {
    REQUIRE(error_of(kMinimal + "metrics: [loss]\ncheckpoint: {monitor: val_accuracy}\n") ==
            "cfg.yaml:4:23: checkpoint.monitor: 'val_accuracy' needs the accuracy metric; add accuracy to metrics "
            "or monitor val_loss");
    CHECK(load_text(kMinimal + "checkpoint: {monitor: accuracy}\n").checkpoint.monitor == Monitor::accuracy);
    REQUIRE(error_of(kMinimal + "metrics: [loss]\nearly_stopping: {monitor: accuracy}\n") ==
            "cfg.yaml:4:27: early_stopping.monitor: 'accuracy' needs the accuracy metric; add accuracy to metrics "
            "or monitor val_loss");
    // Off, its monitor is not checked (nor read: a false section has no keys).
    CHECK(!load_text(kMinimal + "metrics: [loss]\nearly_stopping: false\n").early_stopping.enabled);
}

TEST_CASE("from_logits only for the crossentropy losses") {
    REQUIRE(error_of(kMinimal + "loss: {name: mean_squared_error, from_logits: true}\n") ==
            "cfg.yaml:3:47: loss.from_logits: only used by the crossentropy losses, not mean_squared_error; "
            "remove it");
}
