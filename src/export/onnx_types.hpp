// The ONNX graph gputrain writes, as plain data (no protobuf): nodes,
// constants, the input and output shapes, metadata. export/onnx_graph.hpp
// makes one from a model; the ONNX module (onnx_module.cpp) writes it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gputrain::exporter {

// The opset the graph is written for (LayerNormalization is opset 17's).
constexpr int64_t kOnnxOpset = 17;

struct OnnxAttribute {
    enum class Kind { integer, real, integers, text };
    std::string name;
    Kind kind = Kind::integer;
    int64_t i = 0;
    float f = 0;
    std::vector<int64_t> ints;
    std::string s;
};

struct OnnxNode {
    std::string op;    // "MatMul"
    std::string name;  // unique: the layer's name, "/" and a part
    std::vector<std::string> inputs, outputs;
    std::vector<OnnxAttribute> attributes;
};

// A constant: float32 (weights) or int64 (shapes, axes).
struct OnnxTensor {
    std::string name;
    std::vector<int64_t> dims;
    bool int64 = false;
    std::vector<float> floats;
    std::vector<int64_t> ints;
};

struct OnnxGraph {
    std::string name;                 // the config file's stem
    std::vector<OnnxNode> nodes;      // in an order that runs (each input made before it is read)
    std::vector<OnnxTensor> initializers;
    std::vector<int64_t> input_dims;  // per sample: model.input_shape
    // Token ids: the input is int64 (what ONNX's Gather takes, and what
    // tokenizers give) when only embedding layers read it; else float32.
    bool input_ids = false;
    std::vector<int64_t> output_dims; // per sample: the model's output shape
    std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props
    std::string doc;
};

}  // namespace gputrain::exporter
