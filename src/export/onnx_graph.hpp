// ONNX export: a trained model's inference forward pass as an ONNX graph.
// onnx_graph() translates the model (its layers' resolved settings and its
// weights) into a plain description with no protobuf in it; write_onnx()
// turns that into an ONNX ModelProto (Debian's libonnx), checks it with ONNX's
// own checker and shape inference, and writes the file atomically.
//
// The graph's input "input" is (N, model.input_shape) float32, the values the
// model sees: after data.scale and data.normalize, which are recorded in the
// file's metadata (gputrain.scale, gputrain.normalize_mean/std) for the caller
// to apply; int64 token ids where only embedding layers read it (a GPT). Its output "output" is (N, output shape): what `gputrain predict`
// writes (class probabilities for a crossentropy model, softmax included;
// the outputs themselves for regression). Tensors stay channels-last (NHWC)
// between layers, as in gputrain; conv2d and pooling transpose to ONNX's NCHW
// around themselves (runtimes cancel the pairs). Dropout is left out and batch
// norm folded into a scale and an offset per channel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "export/onnx_types.hpp"
#include "nn/model.hpp"

namespace gputrain::exporter {

// The model's forward pass in inference mode as ONNX nodes. `model` must live
// in host memory (a CPU backend) with the checkpoint's weights loaded, and
// `cfg` be the config it was built from (resolved: its layers' settings,
// defaults included). Throws ConfigError naming a layer ONNX cannot express.
OnnxGraph onnx_graph(nn::Model& model, const config::RunConfig& cfg);

// The graph as an ONNX model (IR version 8, opset kOnnxOpset, ONNX's checker
// and strict shape inference passed, the inferred output shape = the model's),
// written to `path` through a temporary file renamed into place. Throws Error,
// also when this gputrain was built without ONNX or its ONNX module
// (libgputrain_onnx.so) cannot be loaded.
void write_onnx(const OnnxGraph& graph, const std::string& path);

}  // namespace gputrain::exporter
