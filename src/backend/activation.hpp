// Activation kinds known to every backend and to the `activation:` key of layers.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

namespace gputrain {

enum class Activation { linear, relu, sigmoid, tanh, softmax, gelu };

// relu, sigmoid, tanh and gelu act on each value alone; linear does nothing
// and softmax works across a row.
inline bool is_elementwise(Activation a) { return a != Activation::linear && a != Activation::softmax; }

// Calls body(std::integral_constant<Activation, A>{}) for an element-wise
// activation a (relu, sigmoid, tanh, gelu), so that the loop inside is
// compiled once per kind; returns false for linear and softmax.
template <class Body>
bool with_elementwise_activation(Activation a, Body&& body) {
    switch (a) {
        case Activation::relu:
            body(std::integral_constant<Activation, Activation::relu>{});
            return true;
        case Activation::sigmoid:
            body(std::integral_constant<Activation, Activation::sigmoid>{});
            return true;
        case Activation::tanh:
            body(std::integral_constant<Activation, Activation::tanh>{});
            return true;
        case Activation::gelu:
            body(std::integral_constant<Activation, Activation::gelu>{});
            return true;
        case Activation::linear:
        case Activation::softmax:
            break;
    }
    return false;
}

const std::vector<std::string>& activation_names();
std::string activation_name(Activation a);
// Returns false for an unknown name.
bool parse_activation(const std::string& name, Activation& out);

}  // namespace gputrain
