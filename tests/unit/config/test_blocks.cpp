// blocks: a named sub-graph with parameters, instanced by {block: NAME, ...}
// and expanded into ordinary layers with scoped names.
#include <catch2/catch.hpp>

#include "load_helpers.hpp"

using namespace gputrain::config;
using namespace gputrain::config::testing;

namespace {

const std::string kBlocks =
    "blocks:\n"
    "  res:\n"
    "    params: {units: ~, act: relu}\n"
    "    layers:\n"
    "      - {type: dense, units: $units, activation: \"${act}\"}\n"
    "      - {type: dense, units: $units, name: second}\n"
    "      - {type: add, inputs: [second, input]}\n";

std::string with_model(const std::string& layers, const std::string& blocks = kBlocks) {
    return blocks + "model:\n  input_shape: [4]\n  layers:\n" + layers + "data: {dataset: synthetic}\n";
}

std::string inputs_of(const LayerSpec& spec) {
    std::string out;
    for (const auto& in : spec.inputs) {
        if (!out.empty()) out += ',';
        if (in.layer == LayerInput::kByName) out += in.name;
        else out += '#' + std::to_string(in.layer);  // (a char, not "#": GCC 12's -Wrestrict misfires on the latter)
    }
    return out;
}

}  // namespace

TEST_CASE("A block instance expands into scoped layers, its parameters put in") {
    const RunConfig cfg = load_text(with_model("    - {type: dense, units: 4}\n"
                                               "    - {block: res, units: 4, act: tanh}\n"
                                               "    - {block: res, name: stage, repeat: 2, units: 4}\n"
                                               "    - {type: dense, units: 2, inputs: [stage]}\n"));
    const auto& l = cfg.model.layers;
    REQUIRE(l.size() == 1 + 3 + 6 + 1);
    CHECK(l[0].name.empty());
    CHECK(l[1].name == "res/dense");
    CHECK(l[1].params.at("activation") == "tanh");
    CHECK(l[1].params.at("units") == "4");
    CHECK(inputs_of(l[1]) == "#0");  // the layer before the instance
    CHECK(l[2].name == "res/second");
    CHECK(l[2].inputs.empty());
    CHECK(l[3].name == "res/add");
    CHECK(inputs_of(l[3]) == "#2,#0");
    CHECK(l[4].name == "stage/block1/dense");
    CHECK(l[4].params.at("activation") == "relu");  // the default
    CHECK(inputs_of(l[4]) == "#3");
    CHECK(inputs_of(l[6]) == "#5,#3");
    CHECK(l[7].name == "stage/block2/dense");
    CHECK(inputs_of(l[7]) == "#6");
    CHECK(inputs_of(l[9]) == "#8,#6");
    CHECK(inputs_of(l[10]) == "#9");  // an instance's name stands for its last layer
    CHECK(l[1].scoped);
    CHECK(!l[0].scoped);
    // A value that is one parameter points where that parameter's value was
    // written: the instance's key, or the parameter's default; any other
    // value points into the block's definition.
    CHECK(l[4].where.at("units") == "cfg.yaml:13:51");
    CHECK(l[5].where.at("units") == "cfg.yaml:13:51");
    CHECK(l[4].where.at("activation") == "cfg.yaml:3:29");
    CHECK(l[1].where.at("activation") == "cfg.yaml:12:35");
    CHECK(l[6].where.at("inputs").rfind("cfg.yaml:7:", 0) == 0);
}

TEST_CASE("Blocks nest, and an instance may name its input") {
    const std::string blocks = kBlocks +
                               "  two:\n"
                               "    layers:\n"
                               "      - {block: res, units: 4, name: inner}\n"
                               "      - {block: res, units: 4}\n";
    const RunConfig cfg = load_text(with_model("    - {type: dense, units: 4, name: a}\n"
                                               "    - {type: dense, units: 4, name: b}\n"
                                               "    - {block: two, inputs: a}\n",
                                               blocks));
    const auto& l = cfg.model.layers;
    REQUIRE(l.size() == 2 + 6);
    CHECK(l[2].name == "two/inner/dense");
    CHECK(inputs_of(l[2]) == "#0");
    CHECK(inputs_of(l[4]) == "#3,#0");
    CHECK(l[5].name == "two/res/dense");
    CHECK(inputs_of(l[7]) == "#6,#4");
}

TEST_CASE("Block errors name the place, the block and what it takes") {
    CHECK(error_of(with_model("    - {block: res, units: 4, unit: 3}\n")) ==
          "cfg.yaml:11:36: model.layers[0].unit: unknown parameter for block 'res' (did you mean 'units'?); it "
          "takes: units, act, repeat, name, inputs, trainable");
    CHECK(error_of(with_model("    - {block: res}\n")) ==
          "cfg.yaml:11:15: model.layers[0].block: block 'res' needs parameter 'units'; e.g. {block: res, units: ...}");
    CHECK(error_of(with_model("    - {block: rse, units: 2}\n")) ==
          "cfg.yaml:11:15: model.layers[0].block: unknown block 'rse' (did you mean 'res'?); defined blocks: res");
    const std::string cyclic = "blocks:\n"
                               "  a:\n    layers: [{block: b}]\n"
                               "  b:\n    layers: [{type: relu}, {block: a}]\n";
    CHECK(error_of(with_model("    - {block: a}\n", cyclic)) ==
          "cfg.yaml:5:36: blocks.b.layers[1].block: blocks use each other in a cycle: a -> b -> a; a block may not "
          "contain itself");
    const std::string bad_param = "blocks:\n  x:\n    params: [units]\n    layers: [{type: dense, units: $unit}]\n";
    CHECK(error_of(with_model("    - {block: x, units: 3}\n", bad_param)) ==
          "cfg.yaml:4:28: units: unknown parameter $unit of block 'x' (did you mean 'units'?); its parameters: units");
    const std::string bad_input = "blocks:\n  x:\n    layers: [{type: relu}, {type: add, inputs: [rleu, input]}]\n";
    CHECK(error_of(with_model("    - {block: x}\n", bad_input)) ==
          "cfg.yaml:3:40: layer (add): inputs: unknown input 'rleu' in block 'x' (did you mean 'relu'?); a layer in a "
          "block reads 'input' (the block's input) or a layer of the block above it");
    const std::string braces = "blocks:\n  x:\n    params: [units]\n    layers: [{type: dense, units: ${units}}]\n";
    CHECK(error_of(with_model("    - {block: x, units: 3}\n", braces)) ==
          "cfg.yaml:4:36: YAML syntax error: end of map flow not found; inside {...} YAML reads the braces of "
          "${NAME} as its own; write $NAME, or quote the value (\"${NAME}\")");
    CHECK(error_of(with_model("    - {block: res, units: 2, repeat: 0}\n")) ==
          "cfg.yaml:11:38: model.layers[0].repeat: expected a positive integer, got '0'");
    const std::string cycle = "blocks:\n  x:\n    layers:\n      - {type: dense, units: 4, name: a, inputs: b}\n"
                              "      - {type: dense, units: 4, name: b, inputs: a}\n";
    CHECK(error_of(with_model("    - {block: x}\n", cycle)) ==
          "cfg.yaml:4:42: layer 'a' (dense): inputs: reads 'b', which is listed after it in block 'x' (a cycle, if it "
          "reads this layer back); a block's layers run in list order: list each layer after the layers it reads");
    const std::string later = "blocks:\n  x:\n    layers: [{type: relu, inputs: add}, {type: add, inputs: [relu, input]}]\n";
    CHECK(error_of(with_model("    - {block: x}\n", later)).find("layer (relu): inputs: reads 'add', which is listed "
                                                                  "after it in block 'x'") != std::string::npos);
    const std::string unused = "blocks:\n  x:\n    params: {units: ~, act: relu}\n    layers: [{type: dense, units: $units}]\n";
    CHECK(error_of(with_model("    - {block: x, units: 3}\n", unused)) ==
          "cfg.yaml:3:29: blocks.x.params.act: parameter 'act' of block 'x' is used by none of its layers; write $act "
          "(or ${act}) in a layer's value, or remove it from params");
    const std::string passed_on = "blocks:\n  x:\n    params: {units: ~}\n    layers: [{type: dense, units: $units}]\n"
                                  "  y:\n    params: {n: ~}\n    layers: [{block: x, units: $n}]\n";
    CHECK_NOTHROW(load_text(with_model("    - {block: y, n: 3}\n", passed_on)));
}

TEST_CASE("Block instances and layers share one namespace; automatic instance names skip taken ones") {
    // A layer may not take an instance's name, given or automatic.
    CHECK(error_of(with_model("    - {block: res, units: 4, name: s}\n    - {type: dense, units: 4, name: s}\n")) ==
          "cfg.yaml:12:31: layer 's' (dense): name: duplicate name 's': a block instance above has it; names must be "
          "unique");
    CHECK(error_of(with_model("    - {block: res, units: 4}\n    - {block: res, units: 4}\n"
                              "    - {type: dense, units: 4, name: res_1}\n")) ==
          "cfg.yaml:13:31: layer 'res_1' (dense): name: duplicate name 'res_1': a block instance above has it; names "
          "must be unique");
    // A layer named like the next automatic name: the instance takes the one after.
    const RunConfig cfg = load_text(with_model("    - {block: res, units: 4}\n    - {type: dense, units: 4, name: res_1}\n"
                                               "    - {block: res, units: 4}\n"));
    CHECK(cfg.model.layers.back().name == "res_2/add");
}

TEST_CASE("repeat takes an outer block's parameter; instance keys are no parameter names") {
    const std::string nested = kBlocks + "  stage:\n    params: {n: 2}\n    layers: [{block: res, units: 4, repeat: $n}]\n";
    CHECK(load_text(with_model("    - {block: stage, n: 3}\n", nested)).model.layers.size() == 9);
    CHECK(error_of(with_model("    - {block: stage, n: none}\n", nested)) ==
          "cfg.yaml:10:45: blocks.stage.layers[0].repeat: expected a positive integer, got 'none' (from $n)");
    const std::string reserved = "blocks:\n  x:\n    params: {name: a}\n    layers: [{type: relu, name: $name}]\n";
    CHECK(error_of(with_model("    - {block: x}\n", reserved)) ==
          "cfg.yaml:3:20: blocks.x.params.name: 'name' is a key of every block instance (block, repeat, name, inputs, trainable), "
          "so an instance could not set a parameter of that name; call it something else");
}

TEST_CASE("--set on a block the file does not define is an unknown block") {
    CHECK(error_of(with_model("    - {block: res, units: 4}\n"), {"blocks.rse.params.units=3"}) ==
          "--set blocks.rse.params.units=3: blocks.rse: unknown block 'rse' (did you mean 'res'?); defined blocks: res");
}

TEST_CASE("A block named as a layer type, and $NAME outside any block, say what to write") {
    CHECK(error_of(with_model("    - {type: res, units: 4}\n")) ==
          "cfg.yaml:11:8: layer (res): type: 'res' is a block, not a layer type; use it as {block: res, ...}");
    CHECK(error_of(with_model("    - {type: dense, units: $units}\n")) ==
          "cfg.yaml:11:21: units: $units is a block parameter, but this layer is not in a block; define the block "
          "under blocks:");
}

TEST_CASE("A layer written with its kind as the key is told how to write it") {
    CHECK(error_of(with_model("    - dense: {units: 4}\n")) ==
          "cfg.yaml:11:7: model.layers[0].type: missing; write the kind as a key of the layer: {type: dense, ...} "
          "with the keys of 'dense:' beside it");
}
