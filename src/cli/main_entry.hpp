// The command line: `gputrain fit|evaluate|predict|summary|data|bench|devices`.
// Parses arguments with CLI11, runs the command, and turns errors into one
// line and an exit code:
// 0 ok, 1 runtime failure, 2 usage or config error.
#pragma once

namespace gputrain::cli {

int main_entry(int argc, char** argv);

}  // namespace gputrain::cli
