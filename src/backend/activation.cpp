#include "backend/activation.hpp"

namespace gputrain {

const std::vector<std::string>& activation_names() {
    static const std::vector<std::string> names{"linear", "relu", "sigmoid", "tanh", "softmax", "gelu"};
    return names;
}

std::string activation_name(Activation a) { return activation_names().at(static_cast<size_t>(a)); }

bool parse_activation(const std::string& name, Activation& out) {
    const auto& names = activation_names();
    for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == name) {
            out = static_cast<Activation>(i);
            return true;
        }
    }
    return false;
}

}  // namespace gputrain
