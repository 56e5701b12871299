// resolve_layers: the resolved config names every layer and lists every
// parameter it took, defaults included, so that a default written out and left
// out read the same (in config.yaml, in checkpoints' stored config, in the
// digest), and resolved_again brings a config written without them level.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/config_diff.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "nn/registry.hpp"
#include "nn/resolve_layers.hpp"

using namespace gputrain;
using Changes = std::vector<std::string>;

namespace {

const std::string kData = "data: {dataset: synthetic}\n";

config::RunConfig resolved(const std::string& model_yaml) {
    config::RunConfig cfg = config::load_from_string(model_yaml + kData, "cfg.yaml");
    nn::resolve_layers(cfg);
    return cfg;
}

std::string model_of(const std::string& layers, const std::string& shape = "[28, 28, 1]") {
    return "model: {input_shape: " + shape + ", layers: [" + layers + "]}\n";
}

}  // namespace

TEST_CASE("resolve_layers writes each layer's name and every parameter, defaults included") {
    const auto cfg = resolved(model_of("{type: conv2d, filters: 4, kernel_size: 3}, {type: batch_norm}, "
                                       "{type: max_pool2d}, {type: flatten}, {type: dropout, rate: 2e-1}, "
                                       "{type: dense, units: 10}, {type: dense, units: 10, activation: softmax}"));
    const std::string& y = cfg.resolved_yaml;
    CHECK(y.find("{type: conv2d, name: conv2d, filters: 4, kernel_size: [3, 3], strides: [1, 1], padding: valid, "
                 "dilation_rate: [1, 1], use_bias: true, activation: linear}") != std::string::npos);
    CHECK(y.find("{type: batch_norm, name: batch_norm, momentum: 0.99, epsilon: 0.001, center: true, scale: true, "
                 "sync: false}") != std::string::npos);
    CHECK(y.find("{type: max_pool2d, name: max_pool2d, pool_size: [2, 2], strides: [2, 2], padding: valid}") !=
          std::string::npos);
    CHECK(y.find("{type: flatten, name: flatten}") != std::string::npos);
    CHECK(y.find("{type: dropout, name: dropout, rate: 0.2}") != std::string::npos);
    CHECK(y.find("{type: dense, name: dense, units: 10, activation: linear, use_bias: true}") != std::string::npos);
    CHECK(y.find("{type: dense, name: dense_1, units: 10, activation: softmax, use_bias: true}") != std::string::npos);
}

TEST_CASE("resolve_layers: a default written out, another spelling of a value, or an auto name given: same digest") {
    const auto implicit = resolved(model_of("{type: conv2d, filters: 4, kernel_size: 3}, {type: flatten}, "
                                            "{type: dropout, rate: 0.2}, {type: dense, units: 10}"));
    const auto explicit_ = resolved(model_of(
        "{type: conv2d, name: conv2d, filters: 4, kernel_size: [3, 3], strides: 1, padding: valid, "
        "dilation_rate: [1, 1], use_bias: yes, activation: linear}, {type: flatten, name: flatten}, "
        "{type: dropout, rate: 2e-1}, {type: dense, units: 010, use_bias: on}"));
    CHECK(implicit.resolved_yaml == explicit_.resolved_yaml);
    CHECK(implicit.digest == explicit_.digest);
    // A value that differs still does.
    const auto other = resolved(model_of("{type: conv2d, filters: 4, kernel_size: 3}, {type: flatten}, "
                                         "{type: dropout, rate: 0.2}, {type: dense, units: 10, use_bias: false}"));
    CHECK(other.digest != implicit.digest);
    // The digest before resolving (what a config check alone gives) is another one.
    CHECK(config::load_from_string(model_of("{type: flatten}, {type: dense, units: 10}") + kData, "c").digest !=
          resolved(model_of("{type: flatten}, {type: dense, units: 10}")).digest);
}

TEST_CASE("resolve_layers: the resolved YAML of every layer type loads and resolves to itself") {
    // Each type with its required parameters and an input it takes.
    const std::vector<std::string> layers = {
        "{type: flatten}", "{type: dense, units: 3}", "{type: relu}", "{type: sigmoid}", "{type: tanh}",
        "{type: softmax}", "{type: gelu}", "{type: dropout, rate: 0.5}", "{type: reshape, target_shape: [-1]}",
        "{type: reshape, target_shape: [4, 7, 28]}", "{type: conv2d, filters: 2, kernel_size: [3, 5], strides: 2, "
        "padding: same}", "{type: max_pool2d, pool_size: 3, strides: [1, 2]}", "{type: avg_pool2d}",
        "{type: global_avg_pool2d}", "{type: batch_norm, momentum: 0.5, epsilon: 1e-5, sync: true}",
        "{type: add, inputs: [input, input]}", "{type: concatenate, inputs: [input, input]}",
        "{type: multiply, inputs: [input, input, input]}", "{type: layer_norm, epsilon: 0.001, center: false}",
        "{type: rms_norm, epsilon: 1e-5}", "{type: embedding, input_dim: 10, output_dim: 4}",
        "{type: reshape, target_shape: [28, 28]}, {type: positional_embedding, length: 30}",
        "{type: reshape, target_shape: [28, 28]}, {type: causal_self_attention, heads: 4, use_bias: false}"};
    size_t types_seen = 0;
    for (const auto& type : nn::builtin_layers().types())
        for (const auto& layer : layers)
            if (layer.find("type: " + type + "}") != std::string::npos ||
                layer.find("type: " + type + ",") != std::string::npos) {
                ++types_seen;
                break;
            }
    CHECK(types_seen == nn::builtin_layers().types().size());  // a new layer type gets a row here
    for (const auto& layer : layers) {
        INFO(layer);
        const auto first = resolved(model_of(layer));
        const auto again = config::load_from_string(first.resolved_yaml, "config.yaml");
        config::RunConfig twice = again;
        nn::resolve_layers(twice);
        CHECK(twice.resolved_yaml == first.resolved_yaml);
        CHECK(twice.digest == first.digest);
    }
}

TEST_CASE("resolve_layers reports a bad layer as building the model would") {
    config::RunConfig cfg = config::load_from_string(model_of("{type: dense, units: 4, use_bias: maybe}") + kData,
                                                     "cfg.yaml");
    CHECK_THROWS_WITH(nn::resolve_layers(cfg), Catch::Contains("cfg.yaml:1:") &&
                                                   Catch::Contains("model.layers[0] (dense): use_bias: expected true "
                                                                   "or false, got 'maybe'"));
}

TEST_CASE("resolved_again levels a config written without layer defaults; the diff then names real changes only") {
    const std::string model = model_of("{type: flatten}, {type: dense, units: 10, activation: softmax}");
    // What an earlier gputrain wrote: the config's own resolved YAML, layers as given.
    const std::string earlier = config::load_from_string(model + kData, "cfg.yaml").resolved_yaml;
    const auto now = resolved(model);
    CHECK(nn::resolved_again(earlier) == now.resolved_yaml);
    CHECK(config::changed_keys(earlier, now.resolved_yaml, nn::resolved_again).changes.empty());
    // Without resolving, the defaults and names read as changes.
    CHECK(config::changed_keys(earlier, now.resolved_yaml).changes ==
          Changes{"model.layers[0].name: (none) -> flatten", "model.layers[1].name: (none) -> dense",
                  "model.layers[1].use_bias: (none) -> true"});
    const auto no_bias = resolved(model_of("{type: flatten}, {type: dense, units: 10, activation: softmax, "
                                           "use_bias: false}"));
    CHECK(config::changed_model_keys(earlier, no_bias.resolved_yaml, nn::resolved_again).changes ==
          Changes{"model.layers[1].use_bias: true -> false"});
    // Text that does not load as a config comes back as it is, and compares as before.
    for (const std::string text : {"a: 1\n", "model: {layers: [{type: nope}]}\n", "[1\n"})
        CHECK(nn::resolved_again(text) == text);
    CHECK(config::changed_keys("a: 1\n", "a: 2\n", nn::resolved_again).changes == Changes{"a: 1 -> 2"});
}

TEST_CASE("auto names skip the names later layers give themselves, so a layer inserted into config.yaml fits") {
    // config.yaml names every layer; a dense layer inserted before 'dense' takes the next free name.
    const auto cfg = resolved(model_of("{type: flatten, name: flatten}, {type: dense, units: 4}, "
                                       "{type: dense, name: dense, units: 10}, {type: dense, name: dense_1, units: 3}"));
    CHECK(cfg.resolved_yaml.find("{type: dense, name: dense_2, units: 4,") != std::string::npos);
    CHECK(cfg.resolved_yaml.find("{type: dense, name: dense, units: 10,") != std::string::npos);
    // Two layers that give themselves one name still clash.
    CHECK_THROWS_WITH(resolved(model_of("{type: flatten, name: a}, {type: dense, name: a, units: 3}")),
                      Catch::Contains("model.layers[1] (dense 'a'): name: duplicate layer name 'a'"));
}

TEST_CASE("a layer name that is not UTF-8 is a config error, not a failed checkpoint after an epoch") {
    CHECK_THROWS_WITH(resolved(model_of("{type: flatten, name: \"caf\xe9\"}, {type: dense, units: 3}")),
                      Catch::Contains("model.layers[0] (flatten") && Catch::Contains("name: is not valid UTF-8"));
    CHECK_NOTHROW(resolved(model_of("{type: flatten, name: \"caf\xc3\xa9\"}, {type: dense, units: 3}")));
}
