// The layers' part of the resolved config. config/ keeps layer parameters as
// the text the file gave; only the layers know their defaults. Once a config
// has been checked, resolve_layers writes each layer's name (auto names
// included) and every parameter it took, defaults included, into the
// resolved YAML, so that `use_bias: true` written out and left out read the
// same, in config.yaml, in checkpoints and in the digest.
#pragma once

#include <string>

#include "config/run_config.hpp"

namespace gputrain::nn {

// Fills cfg.model's resolved layer names and parameters, then cfg's resolved
// YAML and digest. Throws ConfigError as building the model would.
void resolve_layers(config::RunConfig& cfg);

// What `yaml`, a resolved config written earlier (config.yaml of a run dir, a
// checkpoint's stored config, perhaps by an earlier gputrain that left layer
// defaults and later keys out), resolves to now: the text to compare a
// current config with. `yaml` itself when it does not load (it is untrusted).
std::string resolved_again(const std::string& yaml);

}  // namespace gputrain::nn
