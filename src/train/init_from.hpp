// model.init_from: a new run's starting weights from a safetensors file (a
// gputrain checkpoint, or any file of F32 tensors named and shaped as the
// model's: one written by Python's safetensors from NumPy arrays). Weights
// and state (batch norm's moving statistics) only: the optimizer starts
// afresh, and the run counts its epochs from 0.
//
// A model tensor takes the file's tensor of the same name, or the one
// model.init_map names for it (the file's name -> the model's); those
// model.init_skip names (a tensor, a layer, or a block scope: every tensor
// under "stage3/") keep their initializer. Every tensor of the model must be
// loaded or skipped, with the file's shape equal to the model's; the file's
// other tensors (a checkpoint's optimizer slots, a head the model lacks) are
// left alone.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "train/replica.hpp"

namespace gputrain::train {

struct InitReport {
    size_t tensors = 0;                // loaded into the model
    std::set<std::string> layers;      // layers all of whose tensors were loaded
    std::vector<std::string> skipped;  // model tensors left at their initializer (init_skip)
    std::vector<std::string> unused;   // the file's tensors nothing took (optimizer slots not counted)
};

// Loads cfg.model.init_from into every replica (all get the same values).
// ConfigError for a file that does not exist or an init_map / init_skip entry
// that names nothing; DataError naming the file and tensor for a damaged
// file, a shape that differs (both shapes), a non-finite value, or tensors
// of the model the file lacks (listed).
InitReport init_from_file(const config::RunConfig& cfg, std::vector<std::unique_ptr<Replica>>& replicas);

// The summary's footnote lines: where the '+'-marked layers' weights came
// from and what init_skip left at its initializers.
std::string init_summary_note(const config::RunConfig& cfg, const InitReport& report);

}  // namespace gputrain::train
