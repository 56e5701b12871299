// Small model configs built in code (not YAML) for the nn and train tests.
#pragma once

#include <map>
#include <string>

#include "config/run_config.hpp"

namespace specs {

inline gputrain::config::LayerSpec layer(const std::string& type, std::map<std::string, std::string> params = {},
                                         const std::string& name = "") {
    gputrain::config::LayerSpec s;
    s.type = type;
    s.name = name;
    s.params = std::move(params);
    s.where[""] = "test.yaml:3:7";
    for (const auto& [k, v] : s.params) s.where[k] = "test.yaml:3:" + std::to_string(10 + k.size());
    return s;
}

// Flatten -> Dense(hidden, act) -> Dense(classes, out_act)
inline gputrain::config::ModelConfig mlp(gputrain::Shape input, int hidden, int classes,
                                         const std::string& act = "relu", const std::string& out_act = "softmax") {
    gputrain::config::ModelConfig m;
    m.input_shape = std::move(input);
    m.layers = {layer("flatten"), layer("dense", {{"units", std::to_string(hidden)}, {"activation", act}}),
                layer("dense", {{"units", std::to_string(classes)}, {"activation", out_act}})};
    return m;
}

}  // namespace specs
