// changed_keys: what a resumed run changed against the run dir's config.yaml.
#include <catch2/catch.hpp>

#include "config/config_diff.hpp"
#include "load_helpers.hpp"

using gputrain::config::changed_keys;
using namespace gputrain::config::testing;

TEST_CASE("changed_keys lists each differing key path with both values, in the new config's order") {
    const std::string before = load_text(kMinimal).resolved_yaml;
    CHECK(changed_keys(before, before).empty());
    const std::string after =
        load_text(kMinimal, {"training.batch_size=64", "optimizer.learning_rate=0.01"}).resolved_yaml;
    const auto changes = changed_keys(before, after);
    REQUIRE(changes.size() == 2);
    CHECK(changes[0] == "optimizer.learning_rate: 0.001 -> 0.01");
    CHECK(changes[1] == "training.batch_size: 32 -> 64");
}

TEST_CASE("changed_keys: layers compare key by key, other lists whole; one-sided keys show (none); bad YAML is said") {
    CHECK(changed_keys("model: {layers: [{type: dense, units: 4}]}\n", "model: {layers: [{type: dense, units: 8}]}\n") ==
          std::vector<std::string>{"model.layers[0].units: 4 -> 8"});
    CHECK(changed_keys("model: {layers: [{type: flatten}, {type: dropout, rate: 0.2}]}\n",
                       "model: {layers: [{type: flatten}, {type: dropout, rate: 0.5}, {type: dense, units: 3}]}\n") ==
          std::vector<std::string>{"model.layers[1].rate: 0.2 -> 0.5", "model.layers[2].type: (none) -> dense",
                                   "model.layers[2].units: (none) -> 3"});
    CHECK(changed_keys("model: {input_shape: [28, 28]}\n", "model: {input_shape: [28, 28, 1]}\n") ==
          std::vector<std::string>{"model.input_shape: [28, 28] -> [28, 28, 1]"});
    CHECK(changed_keys("a: 1\nb: 2\n", "a: 1\nc: 3\n") == std::vector<std::string>{"c: (none) -> 3", "b: 2 -> (none)"});
    CHECK(changed_keys("a: [1\n", "a: 1\n") ==
          std::vector<std::string>{"(the earlier config is not readable YAML)"});
}

TEST_CASE("changed_model_keys keeps what changes the weights' meaning: model, loss, data.scale") {
    using gputrain::config::changed_model_keys;
    const std::string before = load_text(kMinimal).resolved_yaml;
    // What evaluate's config may change freely: paths, batch size, epochs, the optimizer.
    CHECK(changed_model_keys(before, load_text(kMinimal, {"training.batch_size=64", "training.epochs=9",
                                                          "optimizer.learning_rate=0.01"})
                                         .resolved_yaml)
              .empty());
    CHECK(changed_model_keys(before, load_text(kMinimal, {"data.scale=1", "training.batch_size=64"}).resolved_yaml) ==
          std::vector<std::string>{"data.scale: 0.00392156862745098 -> 1"});
    CHECK(changed_model_keys("model: {layers: [{type: dense, activation: relu}]}\nloss: {from_logits: false}\n",
                             "model: {layers: [{type: dense, activation: tanh}]}\nloss: {from_logits: true}\n") ==
          std::vector<std::string>{"model.layers[0].activation: relu -> tanh", "loss.from_logits: false -> true"});
    CHECK(changed_model_keys("a: [1\n", "a: 1\n") == std::vector<std::string>{"(the earlier config is not readable YAML)"});
}
