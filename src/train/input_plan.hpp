// The data's way into the model outside a training step: data.augment as
// ops::PrepareInputs' plan, and samples as a training step sees them (for
// `gputrain data --augmented`, which shows and checks augmentation).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/ops/prepare_inputs.hpp"
#include "config/run_config.hpp"
#include "data/dataset.hpp"

namespace gputrain::train {

// data.augment as the op's plan, for samples of `shape` ([H, W, C], [H, W], or
// anything else: one row of values, which config validation keeps unaugmented).
ops::AugmentPlan augment_plan(const std::vector<config::AugmentConfig>& steps, const Shape& shape, uint64_t seed);

// Samples [first, first + count) of `d` as training's step `epoch` makes them
// (data.scale, data.normalize, data.augment with training.seed), on the CPU:
// count x sample_elements floats.
std::vector<float> augmented_samples(const config::RunConfig& cfg, const data::Dataset& d, int64_t first,
                                     int64_t count, int64_t epoch);

}  // namespace gputrain::train
