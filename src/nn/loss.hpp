// Losses over integer class labels. When the model ends in a softmax and the
// loss is a cross-entropy, the Model strips the softmax and the loss works on
// logits (fused, numerically stable), as Keras does internally.
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
    bool is_cross_entropy() const { return kind_ != LossKind::mean_squared_error; }
    bool from_logits() const { return from_logits_; }
    void set_from_logits(bool v) { from_logits_ = v; }

    // Adds the loss sum and the correct count of `rows` samples to stats[0..1];
    // writes d(loss sum)/d(output) * grad_scale into grad when not null.
    void compute(Backend& backend, const float* output, const int32_t* labels, int rows, int classes,
                 float grad_scale, float* grad, float* stats) const;

private:
    LossKind kind_;
    bool from_logits_;
};

}  // namespace gputrain::nn
