#include "nn/embedding.hpp"

#include "backend/ops/embedding.hpp"
#include "core/error.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

std::string Embedding::detail() const { return std::to_string(vocab_) + " tokens"; }

Shape Embedding::build(const Shape& input_shape) {
    ids_per_sample_ = shape_elements(input_shape);
    Shape out = input_shape;
    out.push_back(dim_);
    return out;
}

std::vector<ParamSpec> Embedding::param_specs() const {
    return {{"embeddings", {vocab_, dim_}, Init::uniform}};
}

void Embedding::bind(const std::vector<float*>& params, const std::vector<float*>& grads) {
    table_ = params[0];
    table_grad_ = grads[0];
}

void Embedding::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    run_op(ctx.backend, ops::EmbeddingLookup{x, table_, y, static_cast<size_t>(rows) * static_cast<size_t>(ids_per_sample_),
                                             static_cast<int>(vocab_), static_cast<int>(dim_)});
}

void Embedding::backward(const RunContext& ctx, const float* x, const float*, const float* dy, float* dx, int rows) {
    const size_t count = static_cast<size_t>(rows) * static_cast<size_t>(ids_per_sample_);
    if (table_grad_)
        run_op(ctx.backend, ops::EmbeddingGrad{x, dy, table_grad_, count, static_cast<int>(vocab_), static_cast<int>(dim_),
                                               adds_to_grad_});
    if (dx) ctx.backend.fill(dx, count, 0.0f);  // ids are not differentiable
}

std::string PositionalEmbedding::detail() const { return std::to_string(length_) + " positions"; }

Shape PositionalEmbedding::build(const Shape& input_shape) {
    if (input_shape.size() != 2)
        throw ConfigError("layer '" + name_ + "' (positional_embedding): takes (positions, width), got " +
                          shape_to_string(input_shape) + "; put it after an embedding layer");
    positions_ = input_shape[0];
    width_ = input_shape[1];
    if (length_ == 0) length_ = positions_;
    if (positions_ > length_)
        throw ConfigError("layer '" + name_ + "' (positional_embedding): the input has " + std::to_string(positions_) +
                          " positions but length is " + std::to_string(length_) +
                          "; raise length or shorten model.input_shape");
    return input_shape;
}

std::vector<ParamSpec> PositionalEmbedding::param_specs() const {
    return {{"embeddings", {length_, width_}, Init::uniform}};
}

void PositionalEmbedding::bind(const std::vector<float*>& params, const std::vector<float*>& grads) {
    table_ = params[0];
    table_grad_ = grads[0];
}

void PositionalEmbedding::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    const int64_t first = ctx.position < 0 ? 0 : ctx.position;
    if (first + positions_ > length_)
        throw Error("layer '" + name_ + "' (positional_embedding): position " + std::to_string(first + positions_ - 1) +
                    " is past the table's " + std::to_string(length_) + " positions");
    const size_t per_sample = static_cast<size_t>(positions_ * width_);
    ctx.backend.copy(y, x, static_cast<size_t>(rows) * per_sample * sizeof(float));
    ctx.backend.add_bias(y, table_ + first * width_, rows, static_cast<int>(per_sample));
}

void PositionalEmbedding::backward(const RunContext& ctx, const float*, const float*, const float* dy, float* dx,
                                   int rows) {
    const size_t per_sample = static_cast<size_t>(positions_ * width_);
    if (table_grad_) {
        ctx.backend.sum_rows(dy, table_grad_, rows, static_cast<int>(per_sample));
        if (positions_ < length_)
            ctx.backend.fill(table_grad_ + per_sample, static_cast<size_t>(length_ * width_) - per_sample, 0.0f);
    }
    if (dx) ctx.backend.copy(dx, dy, static_cast<size_t>(rows) * per_sample * sizeof(float));
}

// embedding: input_dim (the vocabulary), output_dim.
// positional_embedding: length (default: the input's positions).
void add_embedding_layers(LayerRegistry& registry) {
    registry.add("embedding", {"input_dim", "output_dim", "trainable", "lr_multiplier"}, [](LayerArgs& args) -> std::unique_ptr<Layer> {
        const int64_t vocab = args.positive_int("input_dim");
        const int64_t dim = args.positive_int("output_dim");
        args.finish();
        return std::make_unique<Embedding>(vocab, dim);
    });
    registry.add("positional_embedding", {"length", "trainable", "lr_multiplier"}, [](LayerArgs& args) -> std::unique_ptr<Layer> {
        const int64_t length = args.has("length") ? args.positive_int("length") : 0;
        args.finish();
        return std::make_unique<PositionalEmbedding>(length);
    });
}

}  // namespace gputrain::nn
