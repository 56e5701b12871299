// Synthetic data: a deterministic, learnable classification set for tests,
// benchmarks and runs without a download. Each class has its own mean pattern;
// a sample is its class's pattern plus uniform noise, rounded and clamped to
// whole numbers in [0, 255] like image bytes, so data.scale applies as it does
// to real images (the default 1/255 gives inputs in [0, 1]).
#pragma once

#include <cstdint>

#include "data/dataset.hpp"

namespace gputrain::data {

enum class SyntheticSplit { train, test };

// `samples` samples of shape `sample_shape` over `classes` classes. The class
// patterns depend only on `seed`; train and test draw different samples from them.
// Throws ConfigError on an empty shape, classes < 1 or samples < 1.
Dataset make_synthetic(const Shape& sample_shape, int64_t samples, int64_t classes, uint64_t seed,
                       SyntheticSplit split);

}  // namespace gputrain::data
