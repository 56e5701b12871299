// The resolved config: every key with its value, defaults filled in, as YAML
// that load_from_string reads back to the same RunConfig. Stored in the run
// dir (fit logs where); its digest is stored in checkpoints.
#pragma once

#include <string>

#include "config/run_config.hpp"

namespace gputrain::config {

std::string resolved_yaml(const RunConfig& config);

// Hex FNV-1a 64 of the resolved YAML without training.epochs, so that a run
// resumed with more epochs keeps its digest.
std::string config_digest(const RunConfig& config);

// 16 lowercase hex digits.
std::string fnv1a64_hex(const std::string& text);

}  // namespace gputrain::config
