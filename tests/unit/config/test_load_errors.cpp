// Each kind of config error, with its exact text: "PLACE: key.path: problem; hint".
#include <catch2/catch.hpp>

#include "load_helpers.hpp"

using namespace gputrain::config;
using namespace gputrain::config::testing;

TEST_CASE("a missing file names the file and the system's reason") {
    try {
        load("no/such/config.yaml");
        FAIL("no error");
    } catch (const gputrain::ConfigError& e) {
        REQUIRE(std::string(e.what()) == "cannot read config 'no/such/config.yaml': No such file or directory");
        REQUIRE(e.exit_code() == 2);
    }
    try {
        load(".");
        FAIL("no error");
    } catch (const gputrain::ConfigError& e) {
        REQUIRE(std::string(e.what()) == "cannot read config '.': Is a directory");
    }
}

TEST_CASE("a comma outside brackets after a top-level node is an error, not a hang in yaml-cpp") {
    // Each of these made yaml-cpp 0.7 loop forever (found by libFuzzer).
    const std::string message = "YAML syntax error: ',' outside [ ] or { }; remove it or quote the value";
    REQUIRE(error_of(",b\n") == "cfg.yaml:1:1: " + message);
    REQUIRE(error_of("# comment\n  a: 1\n,\n") == "cfg.yaml:3:1: " + message);
    REQUIRE(error_of("'x' ,\n") == "cfg.yaml:1:5: " + message);
    REQUIRE(error_of("{a: 1}\n,\n") == "cfg.yaml:2:1: " + message);
    REQUIRE(error_of("!#,o#o") == "cfg.yaml:1:3: " + message);
    // Commas inside brackets, quotes, comments and plain values stay legal.
    REQUIRE(error_of("training: {epochs: 3,\n  batch_size: 4}\nlogging: {level: 'a,b'}  # x, y\nrun_dir: a, b\n")
                .find("outside [ ]") == std::string::npos);
}

TEST_CASE("YAML syntax errors carry yaml-cpp's line and column") {
    REQUIRE(error_of("training: {epochs: 3\nmodel: x\n") == "cfg.yaml:2:6: YAML syntax error: end of map flow not found");
    // A misindented line is pointed at.
    REQUIRE(error_of("training:\n  epochs: 3\n   batch_size: 4\n") ==
            "cfg.yaml:3:14: YAML syntax error: illegal map value; line 3 is indented deeper than the line before (line "
            "2), which ends with a value, not ':'; align it with the keys it belongs with");
    REQUIRE(error_of("model:\n  layers:\n    - type: dense\n     units: 3\nloss: mean_squared_error\n") ==
            "cfg.yaml:4:6: YAML syntax error: end of sequence not found; line 4 is indented 5 spaces, which matches "
            "none of the levels around it; align it with the keys it belongs with");
    REQUIRE(error_of("model:\n  layers:\n    - {type: flatten}\n - {type: dense}\n") ==
            "cfg.yaml:4:2: YAML syntax error: end of map not found; line 4 is indented 1 space, which matches none "
            "of the levels around it; align it with the keys it belongs with");
}

TEST_CASE("A syntax error after a tab in the indentation says so") {
    REQUIRE(error_of("model:\n\tinput_shape: [28, 28]\n") ==
            "cfg.yaml:2:13: YAML syntax error: illegal map value; line 2 is indented with a tab, which YAML does not "
            "allow; indent with spaces");
    // A tab after the indentation is no hint (the indentation is).
    REQUIRE(error_of("training:\n  epochs: 3\t\n   batch_size: 4\n") ==
            "cfg.yaml:3:14: YAML syntax error: illegal map value; line 3 is indented deeper than the line before (line "
            "2), which ends with a value, not ':'; align it with the keys it belongs with");
}

TEST_CASE("the top level must be one mapping") {
    const std::string sections =
        "a mapping of sections (run_dir, blocks, model, loss, metrics, optimizer, data, training, strategy, checkpoint, "
        "early_stopping, reduce_lr_on_plateau, logging)";
    REQUIRE(error_of("") == "cfg.yaml:1:1: the config is empty; expected " + sections);
    REQUIRE(error_of("# only a comment\n") == "cfg.yaml:1:1: the config is empty; expected " + sections);
    REQUIRE(error_of("- model\n- data\n") == "cfg.yaml:1:1: expected " + sections + " at the top level, got a list");
    REQUIRE(error_of("hello\n") == "cfg.yaml:1:1: expected " + sections + " at the top level, got 'hello'");
    REQUIRE(error_of(kMinimal + "---\nmodel: {}\n") ==
            "cfg.yaml:4:1: more than one YAML document; put the whole config in one");
}

TEST_CASE("unknown keys at every level, with did-you-mean or the known keys") {
    REQUIRE(error_of(kMinimal + "training:\n  epoch: 3\n") ==
            "cfg.yaml:4:3: training.epoch: unknown key (did you mean 'epochs'?)");
    REQUIRE(error_of(kMinimal + "trainig: {epochs: 3}\n") ==
            "cfg.yaml:3:1: trainig: unknown key (did you mean 'training'?)");
    REQUIRE(error_of(kMinimal + "colour: red\n") ==
            "cfg.yaml:3:1: colour: unknown key; known keys: run_dir, blocks, model, loss, metrics, optimizer, data, "
            "training, strategy, checkpoint, early_stopping, reduce_lr_on_plateau, logging");
    REQUIRE(error_of(kMinimal + "optimizer: {schedule: {type: cosine, min_lrr: 0}}\n") ==
            "cfg.yaml:3:38: optimizer.schedule.min_lrr: unknown key (did you mean 'min_lr'?)");
    REQUIRE(error_of(kMinimal + "loss: {name: mean_squared_error, from_logit: false}\n") ==
            "cfg.yaml:3:34: loss.from_logit: unknown key (did you mean 'from_logits'?)");
    REQUIRE(error_of("model: {input_shape: [2], layers: [{type: dense}], extra: 1}\ndata: {dataset: x}\n") ==
            "cfg.yaml:1:52: model.extra: unknown key; known keys: input_shape, layers, init_from, init_map, init_skip");
    REQUIRE(error_of(kModel + "data: {dataset: synthetic, synthetic: {sample: 5}}\n") ==
            "cfg.yaml:2:40: data.synthetic.sample: unknown key (did you mean 'samples'?)");
    REQUIRE(error_of(kMinimal + "checkpoint: {keep: 2}\n") ==
            "cfg.yaml:3:14: checkpoint.keep: unknown key; known keys: dir, every_epochs, keep_last, save_best, "
            "monitor, mode");
}

TEST_CASE("a key of another section, or another name for a key, is answered with where it belongs") {
    REQUIRE(error_of(kMinimal + "training: {learning_rate: 0.1}\n") ==
            "cfg.yaml:3:12: training.learning_rate: unknown key (did you mean 'optimizer.learning_rate'?)");
    REQUIRE(error_of(kMinimal + "epochs: 3\n") == "cfg.yaml:3:1: epochs: unknown key (did you mean 'training.epochs'?)");
    REQUIRE(error_of(kMinimal + "optimizer: {lr: 0.1}\n") ==
            "cfg.yaml:3:13: optimizer.lr: unknown key (did you mean 'learning_rate'?)");
    REQUIRE(error_of(kMinimal + "training: {lr: 0.1}\n") ==
            "cfg.yaml:3:12: training.lr: unknown key (did you mean 'optimizer.learning_rate'?)");
    REQUIRE(error_of(kMinimal + "logging: {precision: bf16}\n") ==
            "cfg.yaml:3:11: logging.precision: unknown key (did you mean 'training.precision'?)");
    // A key several sections have ("seed", "type") is not sent anywhere: the known keys are listed.
    REQUIRE(error_of(kMinimal + "checkpoint: {seed: 1}\n") ==
            "cfg.yaml:3:14: checkpoint.seed: unknown key; known keys: dir, every_epochs, keep_last, save_best, "
            "monitor, mode");
}

TEST_CASE("duplicate keys and keys that are not names") {
    REQUIRE(error_of(kMinimal + "training: {epochs: 3, epochs: 4}\n") ==
            "cfg.yaml:3:23: training.epochs: duplicate key (first at cfg.yaml:3:12); remove one");
    REQUIRE(error_of(kMinimal + "training: {[a]: 3}\n") == "cfg.yaml:3:12: training: keys must be names, got a list");
}

TEST_CASE("a section that is not a mapping") {
    REQUIRE(error_of(kMinimal + "training: 5\n") == "cfg.yaml:3:11: training: expected a mapping, got '5'");
    REQUIRE(error_of(kMinimal + "optimizer: {schedule: [cosine]}\n") ==
            "cfg.yaml:3:23: optimizer.schedule: expected a mapping, got a list");
}

TEST_CASE("wrong types say what was expected and what was given") {
    const auto training = [](const std::string& body) { return error_of(kMinimal + "training: {" + body + "}\n"); };
    REQUIRE(training("epochs: abc") == "cfg.yaml:3:20: training.epochs: expected a positive integer, got 'abc'");
    REQUIRE(training("epochs: 2.5") == "cfg.yaml:3:20: training.epochs: expected a positive integer, got '2.5'");
    REQUIRE(training("epochs: [1]") == "cfg.yaml:3:20: training.epochs: expected a positive integer, got a list");
    REQUIRE(training("epochs: ") == "cfg.yaml:3:12: training.epochs: expected a positive integer, got nothing");
    REQUIRE(training("shuffle: maybe") == "cfg.yaml:3:21: training.shuffle: expected true or false, got 'maybe'");
    REQUIRE(training("seed: -1") == "cfg.yaml:3:18: training.seed: expected an integer >= 0, got '-1'");
    REQUIRE(error_of(kMinimal + "logging: {every_steps: -5}\n") ==
            "cfg.yaml:3:24: logging.every_steps: expected an integer >= 0, got '-5'");
    REQUIRE(error_of(kMinimal + "logging: {every_steps: often}\n") ==
            "cfg.yaml:3:24: logging.every_steps: expected an integer >= 0, got 'often'");
    REQUIRE(error_of(kMinimal + "optimizer: {learning_rate: fast}\n") ==
            "cfg.yaml:3:28: optimizer.learning_rate: expected a positive number, got 'fast'");
    REQUIRE(error_of(kMinimal + "run_dir: {a: 1}\n") == "cfg.yaml:3:10: run_dir: expected a string, got a mapping");
    REQUIRE(error_of(kMinimal + "metrics: {accuracy: true}\n") ==
            "cfg.yaml:3:10: metrics: expected a list of metrics, got a mapping; e.g. metrics: [accuracy]");
    REQUIRE(error_of(kMinimal + "loss: [mse]\n") ==
            "cfg.yaml:3:7: loss: expected a loss name or a mapping, got a list; e.g. loss: categorical_crossentropy "
            "or loss: {name: categorical_crossentropy, from_logits: true}");
}

TEST_CASE("bad values: non-positive counts, fractions out of range, empty names") {
    REQUIRE(error_of(kMinimal + "training: {epochs: 0}\n") ==
            "cfg.yaml:3:20: training.epochs: expected a positive integer, got '0'");
    REQUIRE(error_of(kMinimal + "training: {batch_size: -32}\n") ==
            "cfg.yaml:3:24: training.batch_size: expected a positive integer, got '-32'");
    REQUIRE(error_of(kMinimal + "optimizer: {learning_rate: 0}\n") ==
            "cfg.yaml:3:28: optimizer.learning_rate: expected a positive number, got '0'");
    REQUIRE(error_of(kMinimal + "optimizer: {learning_rate: -0.1}\n") ==
            "cfg.yaml:3:28: optimizer.learning_rate: expected a positive number, got '-0.1'");
    REQUIRE(error_of("model: {input_shape: [1], layers: [{type: dense}]}\ndata: {dataset: d, validation_split: 1}\n") ==
            "cfg.yaml:2:38: data.validation_split: expected a number in [0, 1), got '1'");
    REQUIRE(error_of("model: {input_shape: [1], layers: [{type: dense}]}\ndata: {dataset: d, validation_split: -0.2}\n") ==
            "cfg.yaml:2:38: data.validation_split: expected a number in [0, 1), got '-0.2'");
    REQUIRE(error_of(kMinimal + "optimizer: {weight_decay: -1}\n") ==
            "cfg.yaml:3:27: optimizer.weight_decay: expected a number >= 0, got '-1'");
    REQUIRE(error_of(kMinimal + "checkpoint: {keep_last: -1}\n") ==
            "cfg.yaml:3:25: checkpoint.keep_last: expected an integer >= 0, got '-1'");
    REQUIRE(error_of(kMinimal + "run_dir: ''\n") ==
            "cfg.yaml:3:10: run_dir: is empty; give a directory, e.g. run_dir: runs/mnist");
    REQUIRE(error_of(kMinimal + "optimizer: {learning_rate: .nan}\n") ==
            "cfg.yaml:3:28: optimizer.learning_rate: expected a positive number, got '.nan'");
}

TEST_CASE("unknown names list the known ones, with did-you-mean") {
    REQUIRE(error_of(kMinimal + "optimizer: {type: adma}\n") ==
            "cfg.yaml:3:19: optimizer.type: unknown optimizer 'adma' (did you mean 'adam'?); "
            "known optimizers: sgd, adam, adamw, rmsprop");
    REQUIRE(error_of(kMinimal + "optimizer: {type: adagrad}\n") ==
            "cfg.yaml:3:19: optimizer.type: unknown optimizer 'adagrad'; known optimizers: sgd, adam, adamw, rmsprop");
    // RMSprop's own keys: only for it; warmup over epochs or steps, not both.
    REQUIRE(error_of(kMinimal + "optimizer: {type: adam, rho: 0.8}\n") ==
            "cfg.yaml:3:30: optimizer.rho: only used by rmsprop, not adam; remove it or use type: rmsprop");
    REQUIRE(error_of(kMinimal + "optimizer: {type: rmsprop, rho: 1.0}\n") ==
            "cfg.yaml:3:33: optimizer.rho: expected a number in [0, 1), got '1.0'");
    REQUIRE(error_of(kMinimal + "optimizer: {schedule: {warmup_epochs: 1, warmup_steps: 100}}\n") ==
            "cfg.yaml:3:56: optimizer.schedule.warmup_steps: is set, and so is warmup_epochs; warm up over epochs or "
            "over steps: remove one");
    REQUIRE(error_of(kMinimal + "loss: sparse_categorical_crosentropy\n") ==
            "cfg.yaml:3:7: loss: unknown loss 'sparse_categorical_crosentropy' (did you mean "
            "'sparse_categorical_crossentropy'?); known losses: sparse_categorical_crossentropy, "
            "categorical_crossentropy, mean_squared_error, mean_absolute_error, huber");
    REQUIRE(error_of(kMinimal + "optimizer: {schedule: {type: cosin}}\n") ==
            "cfg.yaml:3:30: optimizer.schedule.type: unknown schedule 'cosin' (did you mean 'cosine'?); "
            "known schedules: constant, step_decay, exponential_decay, cosine, linear, one_cycle");
    REQUIRE(error_of(kMinimal + "strategy: {type: mirror}\n") ==
            "cfg.yaml:3:18: strategy.type: unknown strategy 'mirror' (did you mean 'mirrored'?); "
            "known strategies: one_device, mirrored, multi_worker_mirrored");
    REQUIRE(error_of(kMinimal + "logging: {progress: bars}\n") ==
            "cfg.yaml:3:21: logging.progress: unknown progress style 'bars' (did you mean 'bar'?); "
            "known progress styles: auto, bar, lines, none");
    REQUIRE(error_of(kMinimal + "training: {on_nan: skip}\n") ==
            "cfg.yaml:3:20: training.on_nan: unknown on_nan action 'skip'; known on_nan actions: stop, skip_step");
    REQUIRE(error_of(kMinimal + "logging: {level: warning}\n") ==
            "cfg.yaml:3:18: logging.level: unknown log level 'warning'; known log levels: trace, debug, info, warn, "
            "error");
    REQUIRE(error_of(kMinimal + "metrics: [accuracy, acuracy]\n") ==
            "cfg.yaml:3:21: metrics[1]: unknown metric 'acuracy' (did you mean 'accuracy'?); "
            "known metrics: accuracy, mae, mse, loss");
    REQUIRE(error_of(kMinimal + "metrics: [accuracy, accuracy]\n") ==
            "cfg.yaml:3:21: metrics[1]: 'accuracy' is listed twice; remove one");
    REQUIRE(error_of(kMinimal + "checkpoint: {monitor: val_acc}\n") ==
            "cfg.yaml:3:23: checkpoint.monitor: unknown monitored metric 'val_acc' (did you mean 'val_accuracy'?); "
            "known monitored metrics: loss, accuracy, val_loss, val_accuracy, mae, val_mae, mse, val_mse");
    REQUIRE(error_of(kMinimal + "early_stopping:\n") ==
            "cfg.yaml:3:1: early_stopping: is empty; give its keys, e.g. early_stopping: {patience: 3}, or true for "
            "Keras' defaults (patience 0); remove it to train every epoch");
    REQUIRE(error_of(kMinimal + "early_stopping: 3\n") ==
            "cfg.yaml:3:17: early_stopping: expected its keys or true/false, got '3'; e.g. early_stopping: {patience: 3}");
    REQUIRE(error_of(kMinimal + "early_stopping: {patience: 2.5}\n") ==
            "cfg.yaml:3:28: early_stopping.patience: expected an integer >= 0, got '2.5'");
    REQUIRE(error_of(kMinimal + "early_stopping: {restore_best_weights: true}\n") ==
            "cfg.yaml:3:18: early_stopping.restore_best_weights: is not a key here: best.safetensors keeps the best "
            "epoch's weights by checkpoint.monitor, and evaluate scores it; remove it, and set checkpoint.monitor to "
            "early_stopping.monitor's metric");
    REQUIRE(error_of(kMinimal + "early_stopping:\n  patience: 2\n  baseline: 0.5\n") ==
            "cfg.yaml:5:3: early_stopping.baseline: is not supported yet; remove it; min_delta and patience apply from "
            "the first epoch watched");
    REQUIRE(error_of(kMinimal + "early_stopping: {patiense: 2}\n") ==
            "cfg.yaml:3:18: early_stopping.patiense: unknown key (did you mean 'patience'?)");
    REQUIRE(error_of(kMinimal + "reduce_lr_on_plateau:\n") ==
            "cfg.yaml:3:1: reduce_lr_on_plateau: is empty; give its keys, e.g. reduce_lr_on_plateau: {factor: 0.5, "
            "patience: 3}, or true for Keras' defaults (factor 0.1, patience 10); remove it to keep the learning rate");
    for (const char* tiny : {"0", "1e-45"})
        REQUIRE(error_of(kMinimal + "reduce_lr_on_plateau: {factor: " + tiny + "}\n") ==
                "cfg.yaml:3:32: reduce_lr_on_plateau.factor: must be at least 1.2e-38 (float32's smallest normal "
                "number): the rate would become 0; e.g. factor: 0.1");
    for (const char* one : {"1", "0.9999999999"})
        REQUIRE(error_of(kMinimal + "reduce_lr_on_plateau: {factor: " + one + "}\n") ==
                "cfg.yaml:3:32: reduce_lr_on_plateau.factor: must be below 1 in float32 (at most 0.9999999): each cut "
                "multiplies the rate by it; e.g. factor: 0.1");
    REQUIRE(error_of(kMinimal + "reduce_lr_on_plateau: {factor: -0.5}\n") ==
            "cfg.yaml:3:32: reduce_lr_on_plateau.factor: expected a number >= 0, got '-0.5'");
    REQUIRE(error_of(kMinimal + "optimizer: {schedule: {type: cosine}}\nreduce_lr_on_plateau: {patience: 2}\n") ==
            "cfg.yaml:4:23: reduce_lr_on_plateau: works on a constant learning rate, and optimizer.schedule.type is "
            "cosine; use one of the two (optimizer.schedule.warmup_epochs may stay)");
    REQUIRE(error_of(kMinimal + "optimizer: {type: [sgd]}\n") ==
            "cfg.yaml:3:19: optimizer.type: expected one of sgd, adam, adamw, rmsprop, got a list");
}

TEST_CASE("strategy.devices must be all, cpu or GPU ids") {
    REQUIRE(error_of(kMinimal + "strategy: {devices: cpus}\n") ==
            "cfg.yaml:3:21: strategy.devices: expected all, cpu or GPU ids like [0, 1], got 'cpus' (did you mean "
            "'cpu'?)");
    REQUIRE(error_of(kMinimal + "strategy: {devices: [0, gpu1]}\n") ==
            "cfg.yaml:3:25: strategy.devices[1]: expected a GPU id (an integer >= 0), got 'gpu1'");
    REQUIRE(error_of(kMinimal + "strategy: {devices: [1, 1]}\n") ==
            "cfg.yaml:3:25: strategy.devices[1]: GPU 1 is listed twice; remove one");
    REQUIRE(error_of(kMinimal + "strategy: {devices: []}\n") ==
            "cfg.yaml:3:21: strategy.devices: is empty; use all, cpu or a list of GPU ids like [0, 1]");
}

TEST_CASE("strategy.timeout_seconds must be a positive number of seconds") {
    REQUIRE(error_of(kMinimal + "strategy: {type: multi_worker_mirrored, timeout_seconds: 0}\n") ==
            "cfg.yaml:3:58: strategy.timeout_seconds: expected a positive integer, got '0'");
    REQUIRE(error_of(kMinimal + "strategy: {timeout_second: 5}\n") ==
            "cfg.yaml:3:12: strategy.timeout_second: unknown key (did you mean 'timeout_seconds'?)");
}

TEST_CASE("data.scale that takes byte pixels past float32 is an error for IDX and synthetic data, not for CSV") {
    const std::string model =
        "model: {input_shape: [4], layers: [{type: dense, units: 2}]}\n";
    const std::string problem = "data.scale: takes pixel values (0 to 255) past float32's range (3.4e38); give at "
                                "most 1.3e36, e.g. scale: 0.00392156862745098 (1/255)";
    REQUIRE(error_of(model + "data: {dataset: fashion-mnist, scale: 1e37}\n") == "cfg.yaml:2:39: " + problem);
    REQUIRE(error_of(model + "data: {dataset: synthetic, scale: 1e37}\n") == "cfg.yaml:2:35: " + problem);
    REQUIRE(error_of(model + "data: {dataset: fashion-mnist, scale: 1e36}\n") == "(no error)");
    REQUIRE(error_of(model + "data: {path: /x, format: csv, scale: 1e37}\n") == "(no error)");  // checked per value
}
