// Cutting a Dataset: the first N samples (data.limit / data.test_limit) and the
// validation tail (data.validation_split, Keras semantics: the LAST fraction,
// taken before any shuffling, so it is the same samples on every run).
#pragma once

#include <cstdint>
#include <string>

#include "data/dataset.hpp"

namespace gputrain::data {

// Keeps the first `n` samples; n <= 0 or n >= size() keeps all.
void keep_first(Dataset& dataset, int64_t n);

// Moves the last samples out of `train` into the returned Dataset: `train` keeps
// floor(size * (1 - fraction)) samples, as Keras's validation_split does.
// fraction must be in (0, 1). Throws DataError if no training sample would be left.
Dataset split_off_validation(Dataset& train, double fraction);

// The training samples that data.validation_split `fraction` leaves of `n`:
// int(n * (1 - fraction)), as Keras. Throws DataError (naming `what`) if none.
int64_t training_count(int64_t n, double fraction, const std::string& what);

// Copies samples [begin, end) of `dataset` (metadata kept, description too).
Dataset slice(const Dataset& dataset, int64_t begin, int64_t end);

}  // namespace gputrain::data
