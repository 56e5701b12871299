#include "nn/loss.hpp"

namespace gputrain::nn {

Loss::Loss(const config::LossConfig& cfg) : kind_(cfg.name), from_logits_(cfg.from_logits) {}

void Loss::compute(Backend& backend, const float* output, const int32_t* labels, int rows, int classes,
                   float grad_scale, float* grad, float* stats) const {
    if (rows == 0) return;
    switch (kind_) {
        case LossKind::sparse_categorical_crossentropy:
        case LossKind::categorical_crossentropy:
            // Labels are class indices in both; categorical compares against their one-hot form,
            // which gives the same value.
            if (from_logits_)
                backend.softmax_cross_entropy(output, labels, rows, classes, grad_scale, grad, stats);
            else
                backend.cross_entropy_probs(output, labels, rows, classes, grad_scale, grad, stats);
            return;
        case LossKind::mean_squared_error:
            backend.mean_squared_error(output, labels, rows, classes, grad_scale, grad, stats);
            return;
    }
}

}  // namespace gputrain::nn
