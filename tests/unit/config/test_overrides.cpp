// --set key.path=value: applied to the YAML before it is read, checked like the file.
#include <catch2/catch.hpp>

#include "config/overrides.hpp"
#include "load_helpers.hpp"

using namespace gputrain::config;
using namespace gputrain::config::testing;

TEST_CASE("valid overrides change, add and replace keys; values are YAML") {
    const RunConfig c = load_text(kMinimal + "training: {epochs: 5}\n",
                                  {"training.epochs=3", "training.shuffle=false", "optimizer.type=sgd",
                                   "optimizer.schedule.type=cosine", "strategy.devices=[0,1]", "metrics=[loss]",
                                   "run_dir=runs/b", "model.input_shape=[784]", "checkpoint.dir="});
    CHECK(c.training.epochs == 3);
    CHECK_FALSE(c.training.shuffle);
    CHECK(c.optimizer.type == OptimizerType::sgd);
    CHECK(c.optimizer.learning_rate == 0.01);  // the default follows the overridden type
    CHECK(c.optimizer.schedule.type == ScheduleType::cosine);
    CHECK(c.strategy.devices == "0,1");
    CHECK(c.metrics == std::vector<std::string>{"loss"});
    CHECK(c.run_dir == "runs/b");
    CHECK(c.model.input_shape == gputrain::Shape{784});
    CHECK(c.checkpoint.dir.empty());
}

TEST_CASE("the last override of a key wins; spaces around the key are ignored") {
    CHECK(load_text(kMinimal, {"training.epochs=3", " training.epochs =7"}).training.epochs == 7);
    CHECK(load_text(kMinimal, {"strategy.devices=0,1"}).strategy.devices == "0,1");
}

TEST_CASE("loss: NAME takes loss.from_logits and loss.name overrides") {
    const RunConfig c = load_text(kMinimal + "loss: categorical_crossentropy\n", {"loss.from_logits=true"});
    CHECK(c.loss.name == LossKind::categorical_crossentropy);
    CHECK(c.loss.from_logits);
    CHECK(load_text(kMinimal, {"loss=mean_squared_error"}).loss.name == LossKind::mean_squared_error);
    CHECK(load_text(kMinimal, {"loss.name=categorical_crossentropy"}).loss.name == LossKind::categorical_crossentropy);
    // The expanded name still points at the file.
    REQUIRE(error_of(kMinimal + "loss: mse\n", {"loss.from_logits=true"}) ==
            "cfg.yaml:3:7: loss.name: unknown loss 'mse' (did you mean 'mean_squared_error'?); known losses: "
            "sparse_categorical_crossentropy, "
            "categorical_crossentropy, mean_squared_error, mean_absolute_error, huber");
}

TEST_CASE("an unknown key path is an unknown key, placed at the override") {
    REQUIRE(error_of(kMinimal, {"training.epoch=1"}) ==
            "--set training.epoch=1: training.epoch: unknown key (did you mean 'epochs'?)");
    REQUIRE(error_of(kMinimal + "training: {epochs: 2}\n", {"training.epoch=1"}) ==
            "--set training.epoch=1: training.epoch: unknown key (did you mean 'epochs'?)");
    REQUIRE(error_of(kMinimal, {"optimzer.type=sgd"}) ==
            "--set optimzer.type=sgd: optimzer: unknown key (did you mean 'optimizer'?)");
    REQUIRE(error_of(kMinimal, {"optimizer.schedule.kind=cosine"}) ==
            "--set optimizer.schedule.kind=cosine: optimizer.schedule.kind: unknown key; known keys: type, "
            "decay_rate, decay_epochs, decay_steps, staircase, min_lr, warmup_epochs, warmup_steps, max_lr, pct_start, "
            "div_factor, final_div_factor, cycle_momentum, base_momentum, max_momentum");
    REQUIRE(error_of(kMinimal, {"training={epochs: 2, steps: 8}"}) ==
            "--set training={epochs: 2, steps: 8}: training.steps: unknown key; known keys: epochs, batch_size, "
            "shuffle, seed, on_nan, precision, cuda_graphs, fused_kernels, cast_gemm_inputs, gemm_epilogues, "
            "deterministic, steps_per_epoch, clip_norm, accumulate_steps, ema");
}

TEST_CASE("an override key in the wrong section names the right one") {
    REQUIRE(error_of(kMinimal, {"training.learning_rate=0.1"}) ==
            "--set training.learning_rate=0.1: training.learning_rate: unknown key (did you mean "
            "'optimizer.learning_rate'?)");
    REQUIRE(error_of(kMinimal, {"optimizer.lr=0.1"}) ==
            "--set optimizer.lr=0.1: optimizer.lr: unknown key (did you mean 'learning_rate'?)");
}

TEST_CASE("bad values from overrides are placed at the override") {
    REQUIRE(error_of(kMinimal, {"training.epochs=abc"}) ==
            "--set training.epochs=abc: training.epochs: expected a positive integer, got 'abc'");
    REQUIRE(error_of(kMinimal, {"training.epochs="}) ==
            "--set training.epochs=: training.epochs: expected a positive integer, got nothing");
    REQUIRE(error_of(kMinimal, {"optimizer.type=adma"}) ==
            "--set optimizer.type=adma: optimizer.type: unknown optimizer 'adma' (did you mean 'adam'?); "
            "known optimizers: sgd, adam, adamw, rmsprop");
    REQUIRE(error_of(kMinimal, {"optimizer.weight_decay=0.1"}) ==
            "--set optimizer.weight_decay=0.1: optimizer.weight_decay: must be 0 for adam, got 0.1; "
            "use type: adamw for weight decay");
    REQUIRE(error_of(kMinimal, {"model.input_shape=[28, 0]"}) ==
            "--set model.input_shape=[28, 0]: model.input_shape[1]: expected a positive integer, got '0'");
    // A rule broken by the file's key after an override changed another: the file's key is named.
    REQUIRE(error_of(kMinimal + "optimizer: {momentum: 0.9}\n", {"optimizer.type=adam"}) ==
            "cfg.yaml:3:23: optimizer.momentum: only used by sgd and rmsprop, not adam; remove it or use type: sgd or rmsprop");
}

TEST_CASE("malformed overrides") {
    REQUIRE(error_of(kMinimal, {"training.epochs"}) ==
            "--set training.epochs: expected KEY.PATH=VALUE; e.g. --set training.epochs=10");
    REQUIRE(error_of(kMinimal, {"=3"}) ==
            "--set =3: malformed key path ''; write keys joined by dots, e.g. training.epochs or "
            "model.layers[0].units");
    REQUIRE(error_of(kMinimal, {"training..epochs=3"}) ==
            "--set training..epochs=3: malformed key path 'training..epochs'; write keys joined by dots, e.g. "
            "training.epochs or model.layers[0].units");
    REQUIRE(error_of(kMinimal, {"training.epochs=[1"}) ==
            "--set training.epochs=[1: training.epochs: value is not valid YAML (end of sequence flow not found)");
    REQUIRE(error_of(kMinimal + "training: {epochs: 5}\n", {"training.epochs.max=3"}) ==
            "--set training.epochs.max=3: training.epochs: holds a value, not keys; cannot set 'max' inside it");
    REQUIRE(error_of(kMinimal, {"training.epochs.max=3"}) ==
            "--set training.epochs.max=3: training.epochs: expected a positive integer, got a mapping");
}

TEST_CASE("layers: existing items by index, or the whole list") {
    RunConfig c = load_text(kMinimal, {"model.layers[1].units=64", "model.layers.1.use_bias=false"});
    CHECK(c.model.layers[1].params.at("units") == "64");
    CHECK(c.model.layers[1].params.at("use_bias") == "false");
    CHECK(c.model.layers[1].where.at("units") == "--set model.layers[1].units=64");
    CHECK(c.model.layers[1].where.at("activation") == "cfg.yaml:1:83");
    c = load_text(kMinimal, {"model.layers=[{type: flatten}, {type: dense, units: 3}]"});
    REQUIRE(c.model.layers.size() == 2);
    CHECK(c.model.layers[1].params.at("units") == "3");
    CHECK(c.model.layers[1].where.at("") == "--set model.layers=[{type: flatten}, {type: dense, units: 3}]");
    REQUIRE(error_of(kMinimal, {"model.layers[2].units=3"}) ==
            "--set model.layers[2].units=3: model.layers[2]: no such item; model.layers has 2 items; only existing "
            "items can be changed with --set; replace the whole list instead");
    REQUIRE(error_of(kMinimal, {"model.layers.units=3"}) ==
            "--set model.layers.units=3: model.layers: is a list, 'units' is not an index; pick an item by its "
            "index, e.g. model.layers[0]");
    REQUIRE(error_of(kMinimal, {"model.layers[0].type="}) ==
            "--set model.layers[0].type=: model.layers[0].type: is empty; give the layer kind, e.g. type: dense");
    REQUIRE(error_of(kMinimal, {"training[0]=1"}) ==
            "--set training[0]=1: training: is not a list, '[0]' cannot index it");
}

TEST_CASE("split_key_path") {
    CHECK(split_key_path("model.layers[1].units") == std::vector<std::string>{"model", "layers", "[1]", "units"});
    CHECK(split_key_path("a.1.b") == std::vector<std::string>{"a", "1", "b"});
    CHECK(split_key_path("a[1][2]") == std::vector<std::string>{"a", "[1]", "[2]"});
    for (const char* bad : {"", ".a", "a.", "a..b", "[1]", "a[x]", "a[1]b", "a]", "a[1"})
        CHECK(split_key_path(bad).empty());
}
