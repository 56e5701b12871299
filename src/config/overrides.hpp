// --set overrides: "key.path=value" written into the parsed YAML tree before it
// is read, so an override is checked exactly like the file's own keys. The value
// is YAML ("3", "true", "[1, 2]", "{name: mean_squared_error}", "" = nothing).
// List items are addressed by index: model.layers[1].units=64 (or
// model.layers.1.units=64) changes or adds a key of an EXISTING layer; a layer
// cannot be appended or removed this way, only the whole list replaced
// (model.layers=[{type: flatten}, ...]).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config_source.hpp"

namespace gputrain::config {

// `root` must be a mapping. Every node an override writes is pinned in `source`
// to the place "--set key.path=value", so errors about it name the override.
void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, ConfigSource& source);

// "model.layers[1].units" -> {"model", "layers", "[1]", "units"}; empty when malformed.
std::vector<std::string> split_key_path(const std::string& key_path);

}  // namespace gputrain::config
