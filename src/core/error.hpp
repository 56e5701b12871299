// Errors are values with context: library code throws these; only cli/ prints
// them and picks the exit code (2 for usage/config errors, 1 for runtime).
#pragma once

#include <stdexcept>
#include <string>

namespace gputrain {

class Error : public std::runtime_error {
public:
    // A NUL byte that came from the input (a field of a binary file) is kept
    // as "\x00": what() is a C string, which would end there.
    explicit Error(const std::string& message) : std::runtime_error(without_nul(message)) {}
    virtual int exit_code() const { return 1; }
    // The word before the message: "gputrain: error: ...".
    virtual const char* label() const { return "error"; }

private:
    static std::string without_nul(const std::string& message) {
        if (message.find('\0') == std::string::npos) return message;
        std::string out;
        for (const char c : message) {
            if (c == '\0') out += "\\x00";
            else out += c;
        }
        return out;
    }
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
