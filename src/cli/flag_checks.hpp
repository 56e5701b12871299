// Validators for command-line flags whose values CLI11's stock checks describe
// badly (PositiveNumber prints its range up to DBL_MAX).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace gputrain::cli {

// A validator for a whole number in least..most; anything else gets
// "expected <what> from <least> to <most>, got '<text>'".
inline CLI::Validator whole_number(const std::string& what, long long least, long long most) {
    return CLI::Validator(
        [what, least, most](std::string& text) -> std::string {
            const std::string expected = "expected " + what + " from " + std::to_string(least) + " to " +
                                         std::to_string(most) + ", got '" + text + "'";
            size_t used = 0;
            long long n = 0;
            try {
                n = std::stoll(text, &used);
            } catch (const std::exception&) {
                return expected;
            }
            if (used != text.size() || n < least || n > most) return expected;
            return {};
        },
        std::to_string(least) + ".." + std::to_string(most));
}

// --replicas N: an integer in 1..kMaxReplicas.
inline CLI::Validator replica_count() { return whole_number("a number of CPU replicas", 1, config::kMaxReplicas); }

// --steps / --warmup: a whole number of steps from `least` (1 or 0) up to a million.
inline CLI::Validator step_count(long long least) { return whole_number("a number of steps", least, 1000000); }

// A path flag given an empty value ("$UNSET_VAR") would otherwise fall back to
// the default silently.
inline CLI::Validator non_empty_path() {
    return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "is empty; give a path" : ""; },
                          "PATH");
}

// Whether `args` give `flag` an empty value ("--resume ''", "--resume="). For
// a flag whose value is optional, CLI11 reads that as no value at all, so an
// unset variable ("--resume $CKPT") would quietly take the default.
inline bool empty_value_given(const std::vector<std::string>& args, const std::string& flag) {
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == flag + "=") return true;
        if (args[i] == flag && i + 1 < args.size() && args[i + 1].empty()) return true;
    }
    return false;
}

}  // namespace gputrain::cli
