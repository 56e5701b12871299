// Token and position embeddings, the first layers of a sequence model.
//
// `embedding` (Keras' Embedding(input_dim, output_dim), PyTorch's
// nn.Embedding): each input value is a token id, held as a float; the output
// has one `output_dim` vector per id, a row of the `embeddings` table
// [input_dim, output_dim]. Input (T) -> (T, output_dim); any input shape gets
// the axis added. Ids are data, not learned: no gradient flows to the input.
//
// `positional_embedding` (GPT's learned position table, nanoGPT's wpe): adds
// row t of its `embeddings` table [length, C] to position t of a (T, C)
// input. `length` (default: the input's T) is the most positions the model
// takes; a model built on one position for sampling (RunContext::position)
// reads the row of the absolute position.
//
// A dense layer with `tie_weights: NAME` (nn/dense.hpp) uses an embedding's
// table, transposed, as its kernel: one tensor in the model, whose gradient
// is the sum of that layer's and the lookup's. The dense layer runs backward
// first (it comes later) and writes its part; the embedding then adds its
// scatter (set_adds_to_grad).
#pragma once

#include "nn/layer.hpp"

namespace gputrain::nn {

class Embedding : public UnaryLayer {
public:
    Embedding(int64_t input_dim, int64_t output_dim) : vocab_(input_dim), dim_(output_dim) {}

    std::string type() const override { return "embedding"; }
    std::string detail() const override;
    int64_t input_dim() const { return vocab_; }
    int64_t output_dim() const { return dim_; }
    // The table [input_dim, output_dim] and its gradient (null without one), once bound.
    const float* table() const { return table_; }
    float* table_grad() const { return table_grad_; }
    // Backward adds the lookup's gradient to the table's instead of
    // overwriting it: a tied dense layer has written its part there.
    void set_adds_to_grad(bool adds) { adds_to_grad_ = adds; }
    Shape build(const Shape& input_shape) override;
    std::vector<ParamSpec> param_specs() const override;
    void bind(const std::vector<float*>& params, const std::vector<float*>& grads) override;
    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    int64_t vocab_, dim_;
    int64_t ids_per_sample_ = 0;
    float* table_ = nullptr;
    float* table_grad_ = nullptr;
    bool adds_to_grad_ = false;
};

class PositionalEmbedding : public UnaryLayer {
public:
    explicit PositionalEmbedding(int64_t length) : length_(length) {}

    std::string type() const override { return "positional_embedding"; }
    std::string detail() const override;
    Shape build(const Shape& input_shape) override;
    std::vector<ParamSpec> param_specs() const override;
    void bind(const std::vector<float*>& params, const std::vector<float*>& grads) override;
    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

private:
    int64_t length_;  // 0 until built: then the table's rows
    int64_t positions_ = 0, width_ = 0;
    float* table_ = nullptr;
    float* table_grad_ = nullptr;
};

}  // namespace gputrain::nn
