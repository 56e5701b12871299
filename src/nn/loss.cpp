#include "nn/loss.hpp"

#include <string>

#include "core/error.hpp"

namespace gputrain::nn {

Loss::Loss(const config::LossConfig& cfg)
    : kind_(cfg.name),
      from_logits_(cfg.from_logits),
      delta_(static_cast<float>(cfg.delta)),
      smoothing_(static_cast<float>(cfg.label_smoothing)) {}

namespace {
math::RegressionLoss regression_kind(LossKind kind) {
    switch (kind) {
        case LossKind::mean_absolute_error: return math::RegressionLoss::mean_absolute_error;
        case LossKind::huber: return math::RegressionLoss::huber;
        default: return math::RegressionLoss::mean_squared_error;
    }
}
}  // namespace

void Loss::compute(Backend& backend, const float* output, const int32_t* labels, int rows, int classes,
                   float grad_scale, float* grad, float* stats) const {
    if (rows == 0) return;
    if (real_targets_) {
        if (is_cross_entropy())
            throw Error(std::string("internal: ") + config::name_of(kind_) + " with real-valued targets");
        // The labels' storage holds the targets' float bits (Dataset::labels).
        backend.regression_loss(output, reinterpret_cast<const float*>(labels), rows, classes, regression_kind(kind_),
                                delta_, metric_, grad_scale, grad, stats);
        return;
    }
    if (config::needs_real_targets(kind_))
        throw Error(std::string("internal: ") + config::name_of(kind_) + " with class labels");
    switch (kind_) {
        case LossKind::sparse_categorical_crossentropy:
        case LossKind::categorical_crossentropy:
            // Labels are class indices in both; categorical compares against their one-hot form,
            // which gives the same value.
            if (from_logits_)
                backend.softmax_cross_entropy(output, labels, rows, classes, grad_scale, grad, stats, smoothing_);
            else
                backend.cross_entropy_probs(output, labels, rows, classes, grad_scale, grad, stats, smoothing_);
            return;
        case LossKind::mean_squared_error:
            backend.mean_squared_error(output, labels, rows, classes, grad_scale, grad, stats);
            return;
        case LossKind::mean_absolute_error:
        case LossKind::huber:
            return;  // refused above
    }
}

}  // namespace gputrain::nn
