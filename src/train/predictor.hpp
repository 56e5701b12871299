// predict: the model's class probabilities for host inputs, in batches of the
// replica's shard size. When the model's outputs are logits (its softmax fused
// into the cross-entropy, or a from_logits loss) the softmax is applied here, so
// every row sums to 1; a mean_squared_error model's outputs are returned as they are.
#pragma once

#include <cstdint>
#include <vector>

#include "train/replica.hpp"

namespace gputrain::train {

// `inputs` holds `rows` samples of the model's input size; returns rows x classes
// (a sequence model: rows x positions x classes, a distribution per position).
std::vector<float> predict_probabilities(Replica& replica, const std::vector<float>& inputs, int64_t rows);

// Row-wise softmax in double precision, in place (rows x classes).
void softmax_rows(std::vector<float>& values, int64_t classes);

}  // namespace gputrain::train
