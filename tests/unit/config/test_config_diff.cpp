// changed_keys: what a resumed run changed against the run dir's config.yaml,
// or an evaluate against the config a checkpoint stores (which anyone can write).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "config/config_diff.hpp"
#include "load_helpers.hpp"

using gputrain::config::changed_keys;
using gputrain::config::changed_model_keys;
using namespace gputrain::config::testing;
using Changes = std::vector<std::string>;

TEST_CASE("changed_keys lists each differing key path with both values, in the new config's order") {
    const std::string before = load_text(kMinimal).resolved_yaml;
    CHECK(changed_keys(before, before).changes.empty());
    CHECK(changed_keys(before, before).readable);
    const std::string after =
        load_text(kMinimal, {"training.batch_size=64", "optimizer.learning_rate=0.01"}).resolved_yaml;
    const auto diff = changed_keys(before, after);
    CHECK(diff.changes == Changes{"optimizer.learning_rate: 0.001 -> 0.01", "training.batch_size: 32 -> 64"});
    CHECK(diff.text() == "optimizer.learning_rate: 0.001 -> 0.01; training.batch_size: 32 -> 64");
    CHECK(diff.text(1) == "optimizer.learning_rate: 0.001 -> 0.01; and 1 more");
}

TEST_CASE("changed_keys: layers compare key by key, other lists whole; one-sided keys show (none)") {
    CHECK(changed_keys("model: {layers: [{type: dense, units: 4}]}\n", "model: {layers: [{type: dense, units: 8}]}\n")
              .changes == Changes{"model.layers[0].units: 4 -> 8"});
    CHECK(changed_keys("model: {layers: [{type: flatten}, {type: dropout, rate: 0.2}]}\n",
                       "model: {layers: [{type: flatten}, {type: dropout, rate: 0.5}, {type: dense, units: 3}]}\n")
              .changes == Changes{"model.layers[1].rate: 0.2 -> 0.5", "model.layers[2].type: (none) -> dense",
                                  "model.layers[2].units: (none) -> 3"});
    CHECK(changed_keys("model: {input_shape: [28, 28]}\n", "model: {input_shape: [28, 28, 1]}\n").changes ==
          Changes{"model.input_shape: [28, 28] -> [28, 28, 1]"});
    CHECK(changed_keys("a: 1\nb: 2\n", "a: 1\nc: 3\n").changes == Changes{"c: (none) -> 3", "b: 2 -> (none)"});
    // A section only one side has is one change, its keys in one mapping.
    CHECK(changed_keys("a: 1\n", "a: 1\ns: {p: 3, m: val_loss}\nt: {x: 1}\n").changes ==
          Changes{"s: (none) -> {p: 3, m: val_loss}", "t: (none) -> {x: 1}"});
    CHECK(changed_keys("a: 1\ns: {p: 3, q: {r: 1}}\n", "a: 2\n").changes ==
          Changes{"a: 1 -> 2", "s: {p: 3, q.r: 1} -> (none)"});
    CHECK(changed_keys("s: {p: 3}\n", "s: {q: 4}\n").changes == Changes{"s.q: (none) -> 4", "s.p: 3 -> (none)"});
}

TEST_CASE("changed_keys: the same number or boolean written another way is no change") {
    CHECK(changed_keys("a: {units: 0128, rate: 0.5, bias: yes, on: On}\n", "a: {units: 128, rate: 5e-1, bias: true, on: true}\n")
              .changes.empty());
    CHECK(changed_keys("a: {units: 128, bias: no}\n", "a: {units: 129, bias: true}\n").changes ==
          Changes{"a.units: 128 -> 129", "a.bias: no -> true"});
    CHECK(changed_keys("a: '1 '\n", "a: 1\n").changes.size() == 1);  // text with a space is not the number
    // Whole numbers compare exactly: 64-bit seeds differ past what a double holds.
    CHECK(changed_keys("seed: 18446744073709551615\n", "seed: 18446744073709551614\n").changes ==
          Changes{"seed: 18446744073709551615 -> 18446744073709551614"});
    CHECK(changed_keys("seed: 9007199254740993\n", "seed: 9007199254740992\n").changes.size() == 1);
    CHECK(changed_keys("seed: +007\n", "seed: 7\n").changes.empty());
}

TEST_CASE("changed_keys: names and paths compare as text, whatever they look like") {
    CHECK(changed_keys("model: {layers: [{type: dense, name: '1.0'}]}\n", "model: {layers: [{type: dense, name: '1'}]}\n")
              .changes == Changes{"model.layers[0].name: 1.0 -> 1"});
    CHECK(changed_keys("model: {layers: [{name: yes}]}\n", "model: {layers: [{name: on}]}\n").changes ==
          Changes{"model.layers[0].name: yes -> on"});
    CHECK(changed_keys("run_dir: '01'\n", "run_dir: '1'\n").changes == Changes{"run_dir: 01 -> 1"});
    CHECK(changed_keys("data: {path: '2'}\n", "data: {path: '2.0'}\n").changes.size() == 1);
    CHECK(changed_keys("model: {layers: [{rate: '0.50'}]}\n", "model: {layers: [{rate: '0.5'}]}\n").changes.empty());
}

TEST_CASE("changed_keys: an earlier text that cannot be compared is said to be so, with no changes") {
    for (const std::string bad : {"a: [1\n", "hello\n", "[1, 2]\n", "~\n", "",
                                  // a cyclic alias (yaml-cpp builds a node inside itself)
                                  "model: &x {a: *x}\n", "model: &x [{a: *x}]\n",
                                  // an alias bomb: 10^9 nodes from a few hundred bytes
                                  "a: &a {x: 1, y: 1, z: 1, w: 1, v: 1, u: 1, t: 1, s: 1, r: 1, q: 1}\n"
                                  "b: &b {x: *a, y: *a, z: *a, w: *a, v: *a, u: *a, t: *a, s: *a, r: *a, q: *a}\n"
                                  "c: &c {x: *b, y: *b, z: *b, w: *b, v: *b, u: *b, t: *b, s: *b, r: *b, q: *b}\n"
                                  "d: &d {x: *c, y: *c, z: *c, w: *c, v: *c, u: *c, t: *c, s: *c, r: *c, q: *c}\n"
                                  "e: &e {x: *d, y: *d, z: *d, w: *d, v: *d, u: *d, t: *d, s: *d, r: *d, q: *d}\n"
                                  "f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"}) {
        INFO(bad);
        const auto diff = changed_keys(bad, "a: 1\n");
        CHECK_FALSE(diff.readable);
        CHECK(diff.changes.empty());
    }
    std::string deep;
    for (int i = 0; i < 100; ++i) deep += "{a: ";
    deep += "1";
    for (int i = 0; i < 100; ++i) deep += "}";
    CHECK_FALSE(changed_keys("x: " + deep + "\n", "a: 1\n").readable);
}

TEST_CASE("changed_keys: keys and values are shown on one line, escaped, long ones cut") {
    const auto diff = changed_keys("model: {\"evil\\nkey\": 1, b: \"x\\e[31my\\u2028z\"}\n", "model: {b: 2}\n");
    REQUIRE(diff.readable);
    CHECK(diff.changes == Changes{"model.b: x\\x1b[31my\\u2028z -> 2", "model.evil\\x0akey: 1 -> (none)"});
    const auto long_value = changed_keys("a: " + std::string(500, 'v') + "\n", "a: 1\n");
    REQUIRE(long_value.changes.size() == 1);
    CHECK(long_value.changes[0] == "a: " + std::string(120, 'v') + "... -> 1");
    // Exactly the limit: nothing cut. A cut never splits a character (here 2-byte ones).
    CHECK(changed_keys("a: " + std::string(120, 'v') + "\n", "a: 1\n").changes[0] == "a: " + std::string(120, 'v') + " -> 1");
    std::string e_acute;
    for (int i = 0; i < 100; ++i) e_acute += "\xc3\xa9";
    CHECK(changed_keys("a: " + e_acute + "\n", "a: 1\n").changes[0] == "a: " + e_acute.substr(0, 120) + "... -> 1");
}

TEST_CASE("changed_model_keys keeps what changes the weights' meaning: model, loss, data.scale") {
    const std::string before = load_text(kMinimal).resolved_yaml;
    // What evaluate's config may change freely: paths, batch size, epochs, the optimizer.
    CHECK(changed_model_keys(before, load_text(kMinimal, {"training.batch_size=64", "training.epochs=9",
                                                          "optimizer.learning_rate=0.01"})
                                         .resolved_yaml)
              .changes.empty());
    CHECK(changed_model_keys(before, load_text(kMinimal, {"data.scale=1", "training.batch_size=64"}).resolved_yaml)
              .changes == Changes{"data.scale: 0.00392156862745098 -> 1"});
    CHECK(changed_model_keys("model: {layers: [{type: dense, activation: relu}]}\nloss: {from_logits: false}\n",
                             "model: {layers: [{type: dense, activation: tanh}]}\nloss: {from_logits: true}\n")
              .changes == Changes{"model.layers[0].activation: relu -> tanh", "loss.from_logits: false -> true"});
    // Not a gputrain config: nothing to compare the model with.
    for (const std::string other : {"{}\n", "training: {epochs: 1}\n", "a: [1\n"}) {
        INFO(other);
        CHECK_FALSE(changed_model_keys(other, before).readable);
    }
}

TEST_CASE("drop_same_run_dir: one folder spelled two ways is no change; another folder is") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("gputrain-diff-" + std::to_string(::getpid()));
    fs::create_directories(dir / "run");
    const std::string before = "run_dir: " + (dir / "run").string() + "\nseed: 1\n";
    for (const std::string same : {(dir / "run/").string(), (dir / "./run").string(), (dir / "x/../run").string()}) {
        fs::create_directories(dir / "x");
        auto diff = changed_keys(before, "run_dir: " + same + "\nseed: 2\n");
        REQUIRE(diff.changes.size() == 2);
        gputrain::config::drop_same_run_dir(diff, before, same);
        CHECK(diff.changes == Changes{"seed: 1 -> 2"});
    }
    fs::create_directories(dir / "other");
    auto diff = changed_keys(before, "run_dir: " + (dir / "other").string() + "\nseed: 1\n");
    gputrain::config::drop_same_run_dir(diff, before, (dir / "other").string());
    CHECK(diff.changes.size() == 1);
    fs::remove_all(dir);
}
