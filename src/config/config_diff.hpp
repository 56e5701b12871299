// What changed between two resolved configs (config.yaml of a run dir and the
// config a resumed run now uses), key by key, for the message that tells a
// user what a resume changed.
#pragma once

#include <string>
#include <vector>

namespace gputrain::config {

// "training.batch_size: 32 -> 64" for each key path whose value differs, in
// the order of `after`, then keys only `before` had ("x.y: 1 -> (none)").
// Lists compare as a whole (model.layers[1] changed shows as model.layers).
// Either text may be any YAML; text that does not parse gives one entry
// saying so.
std::vector<std::string> changed_keys(const std::string& before_yaml, const std::string& after_yaml);

// The changes among them that alter what trained weights compute or how their
// scores are taken: model.*, loss.* and data.scale (the inputs' scaling).
// For evaluate and predict, whose config may differ from training's in
// everything else (data paths, batch size, epochs).
std::vector<std::string> changed_model_keys(const std::string& before_yaml, const std::string& after_yaml);

}  // namespace gputrain::config
