// evaluate: loss and accuracy of the replicas' (identical) model over a whole
// data set, each replica scoring its shard of every batch, sums reduced across
// replicas. Optionally the confusion matrix (rows: true class, columns: predicted).
#pragma once

#include <memory>
#include <vector>

#include "data/dataset.hpp"
#include "train/replica.hpp"

namespace gputrain::train {

struct EvalResult {
    double loss = 0;
    double accuracy = 0;
    int64_t samples = 0;
    int64_t classes = 0;
    std::vector<int64_t> confusion;  // classes x classes when asked for
};

EvalResult evaluate(std::vector<std::unique_ptr<Replica>>& replicas, const data::Dataset& dataset,
                    int64_t global_batch, bool with_confusion = false);

}  // namespace gputrain::train
