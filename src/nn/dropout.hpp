// Dropout: in training, zero each element with probability `rate` and scale
// the rest by 1/(1-rate); identity in inference. The mask of an element is a
// hash of (seed, layer, epoch, step, its row in the GLOBAL batch, its column),
// so it is the same however the batch is sharded across replicas and on resume.
#pragma once

#include "nn/layer.hpp"

namespace gputrain::nn {

class Dropout : public Layer {
public:
    explicit Dropout(float rate) : rate_(rate) {}

    std::string type() const override { return "dropout"; }
    std::string detail() const override;
    Shape build(const Shape& input_shape) override;
    bool varies_by_step() const override { return rate_ > 0.0f; }
    int64_t scratch_per_sample() const override { return elements_; }
    void set_scratch(float* scratch) override { mask_ = scratch; }
    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    float rate_;
    int64_t elements_ = 0;
    float* mask_ = nullptr;
    bool last_forward_training_ = false;
};

}  // namespace gputrain::nn
