// Activation kinds known to every backend and to the `activation:` key of layers.
#pragma once

#include <string>
#include <vector>

namespace gputrain {

enum class Activation { linear, relu, sigmoid, tanh, softmax, gelu };

const std::vector<std::string>& activation_names();
std::string activation_name(Activation a);
// Returns false for an unknown name.
bool parse_activation(const std::string& name, Activation& out);

}  // namespace gputrain
