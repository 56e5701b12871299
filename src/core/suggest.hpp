// "Did you mean" support: the closest known name to a misspelt one.
#pragma once

#include <string>
#include <vector>

namespace gputrain {

// Edit distance (insertions, deletions, substitutions, adjacent transpositions).
size_t edit_distance(const std::string& a, const std::string& b);

// What Keras, PyTorch and TensorFlow call things that gputrain names
// otherwise: one table, consulted by every "did you mean" (the config's keys
// and values, layer types and keys, metrics, datasets) and printed in
// docs/from-keras-and-pytorch.md (a unit test keeps the two the same).
struct NameAlias {
    const char* name;   // as written there: "BatchNormalization", "p", "val_acc"
    const char* means;  // gputrain's name ("batch_norm"); "" when there is none to write instead
    const char* note;   // what else to know ("with from_logits: true"), or ""
    const char* what;   // what kind of name it is, for the docs: "layer type", "dropout key", ...
};
const std::vector<NameAlias>& name_aliases();

// The candidate `name` stands for: an alias of it in the table above, a
// candidate equal to it but for case, '_' and '-' (`MaxPool2d`,
// `fashion_mnist`), or else the closest one near enough to be a plausible
// typo (distance <= max(1, len/3)); empty when none is.
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)", with the alias' note when it has one, or "" —
// ready to append to a message.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates);

// "a, b, c" — for "known types: ..." lists.
std::string join_names(const std::vector<std::string>& names, const std::string& sep = ", ");

}  // namespace gputrain
