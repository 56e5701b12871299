// config::load: YAML file (+ --set overrides) -> validated RunConfig.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace gputrain::config {

// Reads `path`, applies each "key.path=value" override (parsed as a YAML
// scalar or flow sequence, validated like the file's own keys), fills
// defaults and validates. Throws ConfigError with "file:line:col: key.path: problem; hint".
RunConfig load(const std::string& path, const std::vector<std::string>& overrides = {});

// The same from text (tests); `source_name` is used in messages in place of a path.
RunConfig load_from_string(const std::string& yaml, const std::string& source_name,
                           const std::vector<std::string>& overrides = {});

}  // namespace gputrain::config
