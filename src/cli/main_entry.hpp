// The command line: `gputrain fit|evaluate|predict|summary|data|bench|devices`.
// Parses arguments with CLI11, runs the command, and turns errors into one
// line and an exit code:
// 0 ok, 1 runtime failure, 2 usage or config error.
#pragma once

#include <string>

namespace gputrain::cli {

int main_entry(int argc, char** argv);

// Put before every "gputrain: error: ..." line main_entry prints ("[rank 1] "
// in a multi-worker job, as the workers' other error lines are).
void set_error_prefix(const std::string& prefix);

}  // namespace gputrain::cli
