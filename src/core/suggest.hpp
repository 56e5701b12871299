// "Did you mean" support: the closest known name to a misspelt one.
#pragma once

#include <string>
#include <vector>

namespace gputrain {

// Edit distance (insertions, deletions, substitutions, adjacent transpositions).
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `name` if it is near enough to be a plausible typo
// (distance <= max(1, len/3)); empty when none is.
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" — ready to append to a message.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates);

// "a, b, c" — for "known types: ..." lists.
std::string join_names(const std::vector<std::string>& names, const std::string& sep = ", ");

}  // namespace gputrain
