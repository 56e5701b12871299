// Helpers for the config tests: a minimal valid config and the message a bad one gives.
#pragma once

#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/error.hpp"

namespace gputrain::config::testing {

// The reference model alone (line 1), and the smallest config that loads: it on fashion-mnist.
inline const std::string kModel =
    "model: {input_shape: [28, 28], layers: [{type: flatten}, {type: dense, units: 10, activation: softmax}]}\n";
inline const std::string kMinimal = kModel + "data: {dataset: fashion-mnist}\n";

// The ConfigError message of loading `yaml` as "cfg.yaml", or "(no error)".
inline std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
    try {
        load_from_string(yaml, "cfg.yaml", overrides);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

inline RunConfig load_text(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
    return load_from_string(yaml, "cfg.yaml", overrides);
}

}  // namespace gputrain::config::testing
