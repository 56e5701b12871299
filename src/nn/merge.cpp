#include "nn/merge.hpp"

#include <algorithm>

#include "backend/ops/elementwise.hpp"
#include "core/error.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

namespace {

std::string names_text(const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
    return out;
}

}  // namespace

void fail_input_count(const Layer& layer, size_t given) {
    throw ConfigError("layer '" + layer.name() + "' (" + layer.type() + "): takes one input, got " +
                      std::to_string(given) + " (" + names_text(layer.input_names()) +
                      "); join them first with an add, concatenate or multiply layer");
}

Shape UnaryLayer::build(std::span<const Shape> input_shapes) {
    if (input_shapes.size() != 1) fail_input_count(*this, input_shapes.size());
    return build(input_shapes[0]);
}

std::string Merge::type() const {
    switch (op_) {
        case MergeOp::add: return "add";
        case MergeOp::concatenate: return "concatenate";
        case MergeOp::multiply: return "multiply";
    }
    return "";
}

Shape Merge::build(std::span<const Shape> in) {
    const std::string me = "layer '" + name_ + "' (" + type() + "): ";
    const auto input = [&](size_t i) {
        std::string text = "'";
        if (i < input_names_.size()) text += input_names_[i];
        else text += std::to_string(i);
        text += "' ";
        return text + shape_to_string(in[i]);
    };
    if (in.size() < 2)
        throw ConfigError(me + "needs at least two inputs, got " + std::to_string(in.size()) +
                          "; list them, e.g. inputs: [conv2d, shortcut]");
    if (op_ != MergeOp::concatenate) {
        for (size_t i = 1; i < in.size(); ++i)
            if (in[i] != in[0]) {
                // Only the last axis differs: a layer that sets it fixes that;
                // height and width need strides, pooling or padding instead.
                const bool last_only = in[i].size() == in[0].size() &&
                                       std::equal(in[0].begin(), in[0].end() - 1, in[i].begin());
                throw ConfigError(me + "its inputs must have one shape, but " + input(0) + " and " + input(i) +
                                  " differ; make them equal (" +
                                  (last_only ? std::string("a 1x1 conv2d or a dense layer of that width on one branch")
                                             : std::string("the same strides, pooling and padding on both branches, "
                                                           "or a strided 1x1 conv2d on the wider one")) +
                                  ")");
            }
        elements_ = shape_elements(in[0]);
        return in[0];
    }
    Shape out = in[0];
    width_ = 0;
    widths_.clear();
    for (size_t i = 0; i < in.size(); ++i) {
        const bool same_leading = in[i].size() == in[0].size() &&
                                  std::equal(in[i].begin(), in[i].end() - 1, in[0].begin());
        if (!same_leading)
            throw ConfigError(me + "joins along the last axis, so all other axes must match, but " + input(0) +
                              " and " + input(i) + " differ");
        widths_.push_back(in[i].back());
        width_ += in[i].back();
    }
    out.back() = width_;
    rows_per_sample_ = shape_elements(in[0]) / in[0].back();
    elements_ = shape_elements(out);
    return out;
}

void Merge::forward(const RunContext& ctx, std::span<const float* const> x, float* y, int rows) {
    Backend& b = ctx.backend;
    const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(elements_);
    switch (op_) {
        case MergeOp::add:
            b.copy(y, x[0], n * sizeof(float));
            for (size_t i = 1; i < x.size(); ++i) run_op(b, ops::Accumulate{y, x[i], n});
            return;
        case MergeOp::multiply:
            run_op(b, ops::Multiply{x[0], x[1], y, n});
            for (size_t i = 2; i < x.size(); ++i) run_op(b, ops::Multiply{y, x[i], y, n});
            return;
        case MergeOp::concatenate: {
            const int matrix_rows = static_cast<int>(rows * rows_per_sample_);
            int64_t offset = 0;
            for (size_t i = 0; i < x.size(); ++i) {
                run_op(b, ops::CopyStrided{y + offset, static_cast<int>(width_), x[i], static_cast<int>(widths_[i]),
                                           matrix_rows, static_cast<int>(widths_[i])});
                offset += widths_[i];
            }
            return;
        }
    }
}

void Merge::backward(const RunContext& ctx, std::span<const float* const> x, const float*, const float* dy,
                     std::span<float* const> dx, int rows) {
    Backend& b = ctx.backend;
    const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(elements_);
    switch (op_) {
        case MergeOp::add:
            for (float* d : dx)
                if (d) b.copy(d, dy, n * sizeof(float));
            return;
        case MergeOp::multiply:
            // d/dx_i of x_0 * ... * x_k is dy times the product of the others.
            for (size_t i = 0; i < dx.size(); ++i) {
                if (!dx[i]) continue;
                bool first = true;
                for (size_t j = 0; j < x.size(); ++j) {
                    if (j == i) continue;
                    run_op(b, ops::Multiply{first ? dy : dx[i], x[j], dx[i], n});
                    first = false;
                }
            }
            return;
        case MergeOp::concatenate: {
            const int matrix_rows = static_cast<int>(rows * rows_per_sample_);
            int64_t offset = 0;
            for (size_t i = 0; i < dx.size(); ++i) {
                if (dx[i])
                    run_op(b, ops::CopyStrided{dx[i], static_cast<int>(widths_[i]), dy + offset,
                                               static_cast<int>(width_), matrix_rows, static_cast<int>(widths_[i])});
                offset += widths_[i];
            }
            return;
        }
    }
}

// add, concatenate and multiply: no keys (concatenate refuses axis).
void add_merge_layers(LayerRegistry& registry) {
    const std::pair<const char*, MergeOp> merges[] = {
        {"add", MergeOp::add}, {"concatenate", MergeOp::concatenate}, {"multiply", MergeOp::multiply}};
    for (const auto& [type, op] : merges) {
        registry.add(type, {}, [op = op](LayerArgs& args) -> std::unique_ptr<Layer> {
            if (op == MergeOp::concatenate && args.has("axis"))
                args.fail("axis", "concatenate always joins the last axis (channels for images, Keras' axis=-1); "
                                  "remove axis");
            args.finish();
            return std::make_unique<Merge>(op);
        });
    }
}

}  // namespace gputrain::nn
