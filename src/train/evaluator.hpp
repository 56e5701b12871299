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
    double metric = 0;  // accuracy (class labels), or the mean absolute or squared error (real targets)
    int64_t samples = 0;
    int64_t classes = 0;
    std::vector<int64_t> confusion;  // classes x classes when asked for
};

EvalResult evaluate(std::vector<std::unique_ptr<Replica>>& replicas, const data::Dataset& dataset,
                    int64_t global_batch, bool with_confusion = false);

// Test-time augmentation (evaluate --tta flip): each sample's class
// probabilities are the mean of the model's on the image and on its
// horizontal mirror; the loss is the crossentropy of those means (clipped to
// [1e-7, 1 - 1e-7], Keras' rule for probabilities), the accuracy their argmax.
// Scored by `replica` alone. ConfigError unless the samples are images
// ([H, W] or [H, W, C]) and the loss a crossentropy.
EvalResult evaluate_flip_tta(Replica& replica, const data::Dataset& dataset, config::LossKind loss,
                             bool with_confusion = false);

}  // namespace gputrain::train
