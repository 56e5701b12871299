// yaml_guard: yaml-cpp 0.7 (Debian 12) can loop forever, eating memory, on some
// malformed flow collections ("{a: {b\n, c}" shapes that fuzzing finds within
// seconds). A config must never hang the tool, so the text is first parsed in
// a child process with a time limit; only text that parses (or fails) in time
// is parsed for real.
#pragma once

#include <string>

namespace gputrain::config {

// Throws ConfigError naming `source_name` when yaml-cpp does not finish
// parsing `yaml` within `seconds`.
void check_yaml_terminates(const std::string& yaml, const std::string& source_name, double seconds = 5.0);

}  // namespace gputrain::config
