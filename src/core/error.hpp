// Errors are values with context: library code throws these; only cli/ prints
// them and picks the exit code (2 for usage/config errors, 1 for runtime).
#pragma once

#include <stdexcept>
#include <string>

namespace gputrain {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
    virtual int exit_code() const { return 1; }
    // The word before the message: "gputrain: error: ...".
    virtual const char* label() const { return "error"; }
};

// The user's config, command line or arguments are wrong: exit code 2.
class ConfigError : public Error {
public:
    explicit ConfigError(const std::string& message) : Error(message) {}
    int exit_code() const override { return 2; }
};

// Input data (data set files, checkpoints) is missing, damaged or mismatched: exit code 1.
class DataError : public Error {
public:
    explicit DataError(const std::string& message) : Error(message) {}
};

}  // namespace gputrain
