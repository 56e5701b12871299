// Merge layers: several inputs, one output (Keras' Add, Concatenate and
// Multiply). `add` and `multiply` take 2+ inputs of one shape; `concatenate`
// joins 2+ inputs along the last axis (channels for images), the other axes
// equal. None has parameters.
#pragma once

#include "nn/layer.hpp"

namespace gputrain::nn {

enum class MergeOp { add, concatenate, multiply };

class Merge : public Layer {
public:
    explicit Merge(MergeOp op) : op_(op) {}

    std::string type() const override;
    Shape build(std::span<const Shape> input_shapes) override;
    void forward(const RunContext& ctx, std::span<const float* const> x, float* y, int rows) override;
    void backward(const RunContext& ctx, std::span<const float* const> x, const float* y, const float* dy,
                  std::span<float* const> dx, int rows) override;

private:
    MergeOp op_;
    int64_t elements_ = 0;             // per sample, of the output
    int64_t rows_per_sample_ = 1;      // concatenate: product of the leading axes
    std::vector<int64_t> widths_;      // concatenate: each input's last axis
    int64_t width_ = 0;                // concatenate: the output's last axis
};

// "layer 'NAME' (TYPE): takes one input, got N ..." for a one-input layer given several.
[[noreturn]] void fail_input_count(const Layer& layer, size_t given);

}  // namespace gputrain::nn
