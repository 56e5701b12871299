// What changed between two resolved configs (config.yaml of a run dir, or the
// config a checkpoint stores, against the config a command now uses), key by
// key, for the messages that tell a user what a resume, an evaluate or a
// predict changed.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace gputrain::config {

struct ConfigChanges {
    // False when the earlier text is not a config that can be compared: not
    // YAML, not a mapping, cyclic (an alias inside itself), nested deeper or
    // holding more nodes than any config (an alias bomb), or one that the
    // yaml-cpp hang guard stops. Then `changes` is empty.
    bool readable = true;
    // "training.batch_size: 32 -> 64", each printable on one line (control
    // characters escaped, long values cut).
    std::vector<std::string> changes;
    // The changes joined with "; ", the first `limit` of them and then "and N more".
    std::string text(size_t limit = 12) const;
};

// Each key path whose value differs, in the order of `after`, then keys only
// `before` had ("x.y: 1 -> (none)"). Mappings compare key by key, and lists of
// mappings (model.layers) item by item (model.layers[1].rate); other lists
// compare whole. Scalars that are the same number (128, 0128, 1.28e2) or the
// same boolean (true, yes, on) are equal. `before` may come from a checkpoint
// that anyone can write; `after` is gputrain's own resolved YAML.
//
// `resolve`, when given, turns a readable `before` into what it resolves to
// now (nn::resolved_again: layer defaults and keys added since filled in) before
// the comparison, so that `after`, resolved by this gputrain, is compared
// like with like.
using Resolve = std::function<std::string(const std::string&)>;
ConfigChanges changed_keys(const std::string& before_yaml, const std::string& after_yaml, const Resolve& resolve = {});

// The changes among them that alter what trained weights compute or how their
// scores are taken: model.*, loss.* and data.scale (the inputs' scaling).
// For evaluate and predict, whose config may differ from training's in
// everything else (data paths, batch size, epochs). `before` without a model
// section is not readable.
ConfigChanges changed_model_keys(const std::string& before_yaml, const std::string& after_yaml,
                                 const Resolve& resolve = {});

// Drops the change of `run_dir` when the earlier config's run dir and `run_dir`
// are one folder spelled two ways (P, ./P, P/, /abs/P): a resume in the same
// folder changed nothing.
void drop_same_run_dir(ConfigChanges& changes, const std::string& before_yaml, const std::string& run_dir);

}  // namespace gputrain::config
