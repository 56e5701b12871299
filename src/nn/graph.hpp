// The model's graph: which tensors each layer reads. Tensor 0 is the model's
// input ("input"), tensor i + 1 the output of layer i. Layers are listed in
// an order where each reads only tensors made before it (config order), so
// that order is the forward pass and its reverse the backward pass.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace gputrain::nn {

struct LayerGraph {
    std::vector<std::vector<int>> inputs;   // per layer: the tensors it reads (0 = the model's input)
    std::vector<std::vector<int>> readers;  // per tensor: the layers that read it, in order
    // Each layer reads only the one before it (the model's input for the first).
    bool is_chain() const;
    // "input" or the layer's name.
    std::string tensor_name(int tensor, const std::vector<std::string>& layer_names) const {
        return tensor == 0 ? std::string("input") : layer_names[static_cast<size_t>(tensor - 1)];
    }
};

// Links `specs` (named `names`, their resolved names) into a graph. Throws
// ConfigError at the layer's place for an unknown input (with "did you
// mean"), a cycle, an input listed after its reader, and a layer whose output
// nobody reads that is not the last layer (the model's one output).
LayerGraph link_layers(const std::vector<config::LayerSpec>& specs, const std::vector<std::string>& names);

}  // namespace gputrain::nn
