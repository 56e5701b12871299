// Dropout: in training, zero each element with probability `rate` and scale
// the rest by 1/(1-rate); identity in inference. The mask of an element is a
// hash of (seed, layer, epoch, step, its row in the GLOBAL batch, its column),
// so it is the same however the batch is sharded across replicas and on resume.
#pragma once

#include "nn/layer.hpp"

namespace gputrain::nn {

// The mask key of the layer at `index` for this step: the run's seed split by
// the layer (and `salt`, one per kind of layer), with the epoch and the step.
uint64_t step_mask_key(const RunContext& ctx, int index, uint32_t salt);
// Writes `key` as two 32-bit words to `words` (backend memory, read by the
// mask kernels in stream order) unless they hold it already (`held`, valid once `written`).
void upload_mask_key(const RunContext& ctx, uint32_t* words, uint64_t key, bool& written, uint64_t& held);

class Dropout : public UnaryLayer {
public:
    explicit Dropout(float rate) : rate_(rate) {}

    std::string type() const override { return "dropout"; }
    std::string detail() const override;
    Shape build(const Shape& input_shape) override;
    // The step's mask key goes to backend memory (two 32-bit words at the
    // start of the scratch block), and the mask kernel reads it there.
    void prepare_step(const RunContext& ctx) override;
    int64_t scratch_per_sample() const override { return elements_; }
    int64_t scratch_fixed() const override { return 2; }
    void set_scratch(float* scratch) override {
        key_ = reinterpret_cast<uint32_t*>(scratch);
        mask_ = scratch + 2;
    }
    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    uint64_t key_of(const RunContext& ctx) const;
    void write_key(const RunContext& ctx);

    float rate_;
    int64_t elements_ = 0;
    float* mask_ = nullptr;
    uint32_t* key_ = nullptr;
    bool key_written_ = false;
    uint64_t written_key_ = 0;  // what key_ holds once key_written_
    bool last_forward_training_ = false;
};

}  // namespace gputrain::nn
