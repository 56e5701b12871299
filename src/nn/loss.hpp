// Losses over integer class labels, or over real-valued targets (regression:
// mean squared or absolute error, Huber). When the model ends in a softmax
// and the loss is a cross-entropy, the Model strips the softmax and the loss
// works on logits (fused, numerically stable), as Keras does internally.
#pragma once

#include "backend/backend.hpp"
#include "config/run_config.hpp"

namespace gputrain::nn {

// loss.name, as config/ read it.
using LossKind = config::LossKind;

class Loss {
public:
    explicit Loss(const config::LossConfig& cfg);

    LossKind kind() const { return kind_; }
    bool is_cross_entropy() const { return config::is_cross_entropy(kind_); }
    // Whether the labels are real-valued targets (as many per sample as the
    // model has outputs; Dataset::labels holds their bits) rather than class indices.
    bool real_targets() const { return real_targets_; }
    void set_real_targets(bool real) { real_targets_ = real; }
    // With real targets: the metric summed into stats[1] (mean absolute or squared error).
    void set_metric(math::RegressionMetric metric) { metric_ = metric; }
    bool from_logits() const { return from_logits_; }
    void set_from_logits(bool v) { from_logits_ = v; }

    // Adds the loss sum and the correct count (real targets: the metric's sum)
    // of `rows` samples to stats[0..1]; writes d(loss sum)/d(output) *
    // grad_scale into grad when not null.
    void compute(Backend& backend, const float* output, const int32_t* labels, int rows, int classes,
                 float grad_scale, float* grad, float* stats) const;

private:
    LossKind kind_;
    bool from_logits_;
    float delta_;
    float smoothing_;  // loss.label_smoothing (crossentropies)
    bool real_targets_ = false;
    math::RegressionMetric metric_ = math::RegressionMetric::mae;
};

}  // namespace gputrain::nn
