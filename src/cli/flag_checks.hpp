// Validators for command-line flags whose values CLI11's stock checks describe
// badly (PositiveNumber prints its range up to DBL_MAX).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "config/run_config.hpp"

namespace gputrain::cli {

// --replicas N: an integer in 1..kMaxReplicas.
inline CLI::Validator replica_count() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            const std::string expected = "expected a number of CPU replicas from 1 to " +
                                         std::to_string(config::kMaxReplicas) + ", got '" + text + "'";
            size_t used = 0;
            long long n = 0;
            try {
                n = std::stoll(text, &used);
            } catch (const std::exception&) {
                return expected;
            }
            if (used != text.size() || n < 1 || n > config::kMaxReplicas) return expected;
            return {};
        },
        "1.." + std::to_string(config::kMaxReplicas));
}

// --steps / --warmup: a whole number of steps from `least` (1 or 0) up to a million.
inline CLI::Validator step_count(long long least) {
    constexpr long long kMost = 1000000;
    return CLI::Validator(
        [least](std::string& text) -> std::string {
            const std::string expected = "expected a number of steps from " + std::to_string(least) + " to " +
                                         std::to_string(kMost) + ", got '" + text + "'";
            size_t used = 0;
            long long n = 0;
            try {
                n = std::stoll(text, &used);
            } catch (const std::exception&) {
                return expected;
            }
            if (used != text.size() || n < least || n > kMost) return expected;
            return {};
        },
        std::to_string(least) + "..1000000");
}

// A path flag given an empty value ("$UNSET_VAR") would otherwise fall back to
// the default silently.
inline CLI::Validator non_empty_path() {
    return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "is empty; give a path" : ""; },
                          "PATH");
}

}  // namespace gputrain::cli
