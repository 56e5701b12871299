// Layer: the contract every layer kind follows (Caffe's set-up / forward /
// backward). A layer learns its input shape once (`build`), declares its
// parameters, then is run on batches of `rows` samples living in backend memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/rng.hpp"
#include "core/shape.hpp"

namespace gputrain::nn {

enum class Init { zeros, ones, glorot_uniform };

struct ParamSpec {
    std::string name;   // within the layer: "kernel", "bias"
    Shape shape;
    Init init;
};

// What a forward/backward call may need to know about where it runs.
struct RunContext {
    Backend& backend;
    bool training = false;
    uint64_t seed = 0;            // training.seed
    int64_t epoch = 0;
    int64_t step = 0;             // step within the epoch
    int64_t row_offset = 0;       // index of this shard's first row within the global batch
};

class Layer {
public:
    virtual ~Layer() = default;

    const std::string& name() const { return name_; }
    void set_name(const std::string& name) { name_ = name; }
    virtual std::string type() const = 0;
    // One-line description of non-default settings for the summary, e.g. "relu".
    virtual std::string detail() const { return ""; }

    // Checks the input shape (per sample) and returns the output shape.
    // Throws ConfigError naming the layer on an impossible shape.
    virtual Shape build(const Shape& input_shape) = 0;
    virtual std::vector<ParamSpec> param_specs() const { return {}; }
    // Views into the model's flat buffers, in param_specs() order.
    virtual void bind(const std::vector<float*>& params, const std::vector<float*>& grads) {
        (void)params;
        (void)grads;
    }
    // Floats of per-sample scratch the layer keeps between forward and backward.
    virtual int64_t scratch_per_sample() const { return 0; }
    virtual void set_scratch(float* scratch) { (void)scratch; }

    // If this layer ends in a softmax that the loss can fuse with, drop it so the
    // layer outputs logits; returns whether it did.
    virtual bool strip_final_softmax() { return false; }

    // `layer_index` keys random streams (dropout) so they differ between layers.
    void set_index(int index) { index_ = index; }
    int index() const { return index_; }

    virtual void forward(const RunContext& ctx, const float* x, float* y, int rows) = 0;
    // Writes parameter gradients (overwriting) and, when dx is not null, the input gradient.
    virtual void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                          int rows) = 0;

protected:
    std::string name_;
    int index_ = 0;
};

}  // namespace gputrain::nn
