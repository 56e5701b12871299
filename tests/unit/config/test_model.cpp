// model: input_shape and layers, which the config reads but nn/ validates.
#include <catch2/catch.hpp>

#include "load_helpers.hpp"

using namespace gputrain::config;
using namespace gputrain::config::testing;

namespace {

const std::string kData = "data: {dataset: mnist}\n";

std::string model_error(const std::string& model_line) { return error_of(model_line + "\n" + kData); }

}  // namespace

TEST_CASE("model and its keys must be there") {
    REQUIRE(error_of(kData) ==
            "cfg.yaml:1:1: model: missing; e.g. model: {input_shape: [28, 28], layers: [{type: flatten}, "
            "{type: dense, units: 10}]}");
    REQUIRE(model_error("model: {layers: [{type: flatten}]}") ==
            "cfg.yaml:1:8: model.input_shape: missing; give the shape of one sample, e.g. input_shape: [28, 28]");
    REQUIRE(model_error("model:") ==
            "cfg.yaml:1:1: model.input_shape: missing; give the shape of one sample, e.g. input_shape: [28, 28]");
    REQUIRE(model_error("model: {input_shape: [4]}") ==
            "cfg.yaml:1:8: model.layers: missing; list the layers, e.g. layers: [{type: flatten}, "
            "{type: dense, units: 10}]");
}

TEST_CASE("input_shape: a list of positive integers") {
    const std::string layers = ", layers: [{type: flatten}]}";
    REQUIRE(model_error("model: {input_shape: [28, 0]" + layers) ==
            "cfg.yaml:1:27: model.input_shape[1]: expected a positive integer, got '0'");
    REQUIRE(model_error("model: {input_shape: [28, -1]" + layers) ==
            "cfg.yaml:1:27: model.input_shape[1]: expected a positive integer, got '-1'");
    REQUIRE(model_error("model: {input_shape: []" + layers) ==
            "cfg.yaml:1:22: model.input_shape: is empty; give the shape of one sample, e.g. input_shape: [28, 28]");
    REQUIRE(model_error("model: {input_shape: 0" + layers) ==
            "cfg.yaml:1:22: model.input_shape: expected a positive integer, got '0'");
    REQUIRE(model_error("model: {input_shape: {h: 2}" + layers) ==
            "cfg.yaml:1:22: model.input_shape: expected a list of positive integers, got a mapping; "
            "e.g. input_shape: [28, 28]");
}

TEST_CASE("layers: a non-empty list of mappings, each with a type") {
    const std::string shape = "model: {input_shape: [4], ";
    REQUIRE(model_error(shape + "layers: []}") ==
            "cfg.yaml:1:35: model.layers: is empty; list at least one layer, e.g. layers: [{type: flatten}, "
            "{type: dense, units: 10}]");
    REQUIRE(model_error(shape + "layers: {type: dense}}") ==
            "cfg.yaml:1:35: model.layers: expected a list of layers, got a mapping; e.g. layers: [{type: flatten}, "
            "{type: dense, units: 10}]");
    REQUIRE(model_error(shape + "layers: [{type: flatten}, {units: 10}]}") ==
            "cfg.yaml:1:53: model.layers[1].type: missing; give the layer kind, e.g. type: dense");
    REQUIRE(model_error(shape + "layers: [{type: ''}]}") ==
            "cfg.yaml:1:43: model.layers[0].type: is empty; give the layer kind, e.g. type: dense");
    REQUIRE(model_error(shape + "layers: [flatten]}") ==
            "cfg.yaml:1:36: model.layers[0]: expected a mapping with a type, got 'flatten'; write each layer as "
            "{type: NAME, ...}, e.g. {type: dense, units: 10}");
    REQUIRE(model_error(shape + "layers: [{type: dense, units: 3, units: 4}]}") ==
            "cfg.yaml:1:60: model.layers[0].units: duplicate key (first at cfg.yaml:1:50); remove one");
    REQUIRE(model_error(shape + "layers: [{type: dense, units: {n: 3}}]}") ==
            "cfg.yaml:1:57: model.layers[0].units: expected a value or a list of values, got a mapping");
}

TEST_CASE("a layer key with no value (~, or nothing) is the key left out, as --set ...KEY=~ writes it") {
    const RunConfig c = load_text(
        "model:\n"
        "  input_shape: [4]\n"
        "  layers:\n"
        "    - {type: embedding, input_dim: 5, output_dim: 3}\n"
        "    - {type: dense, units: 5, tie_weights: ~, activation: , use_bias: null}\n" +
        kData);
    CHECK(c.model.layers[1].params == std::map<std::string, std::string>{{"units", "5"}});
}

TEST_CASE("layer parameters are kept as text, unchecked, with their places") {
    const RunConfig c = load_text(
        "model:\n"
        "  input_shape: [8, 8, 1]\n"
        "  layers:\n"
        "    - type: conv2d\n"
        "      filters: 4\n"
        "      kernel_size: [3, 3]\n"
        "      made_up: whatever\n"
        "    - {type: not_a_layer_yet, name: mine}\n" +
        kData);
    REQUIRE(c.model.layers.size() == 2);
    const LayerSpec& conv = c.model.layers[0];
    CHECK(conv.type == "conv2d");
    CHECK(conv.name.empty());
    CHECK(conv.params ==
          std::map<std::string, std::string>{{"filters", "4"}, {"kernel_size", "3,3"}, {"made_up", "whatever"}});
    CHECK(conv.where == std::map<std::string, std::string>{{"", "cfg.yaml:4:7"},
                                                           {"type", "cfg.yaml:4:7"},
                                                           {"filters", "cfg.yaml:5:7"},
                                                           {"kernel_size", "cfg.yaml:6:7"},
                                                           {"made_up", "cfg.yaml:7:7"}});
    CHECK(c.model.layers[1].type == "not_a_layer_yet");
    CHECK(c.model.layers[1].name == "mine");
    CHECK(c.model.layers[1].where.at("name") == "cfg.yaml:8:31");
}
