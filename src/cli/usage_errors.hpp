// CLI11's parse errors in gputrain's words: one line for "gputrain: error: ..."
// that says what to do. An unknown command lists the commands and suggests the
// likely one (train -> fit); a stray --option that names a config key points
// at --set; a config path swallowed by --resume's optional value says where
// --resume goes.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace gputrain::cli {

// The text after "gputrain: error: " for `error`, thrown while `app` parsed
// `args` (the arguments after the program name).
std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error,
                                const std::vector<std::string>& args);

}  // namespace gputrain::cli
