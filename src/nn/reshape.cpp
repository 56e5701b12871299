#include "nn/reshape.hpp"

#include "core/error.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

namespace {

std::string list_text(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

}  // namespace

Shape Reshape::build(const Shape& input_shape) {
    elements_ = shape_elements(input_shape);
    Shape out = target_;
    int64_t known = 1;
    int inferred = -1;
    Shape given;
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == -1)
            inferred = static_cast<int>(i);
        else
            given.push_back(out[i]);
    }
    const std::string subject = "layer '" + name_ + "' (reshape): target_shape " + list_text(target_);
    if (!elements_within(given, kMaxSampleElements, known))
        throw ConfigError(subject + " has more than " + std::to_string(kMaxSampleElements) +
                          " elements, more than its input " + shape_to_string(input_shape, false) + " has (" +
                          std::to_string(elements_) + ")");
    if (inferred >= 0) {
        if (elements_ % known != 0)
            throw ConfigError(subject + " cannot hold the " + std::to_string(elements_) + " elements of input " +
                              shape_to_string(input_shape, false) + ": " + std::to_string(elements_) +
                              " is not a multiple of " + std::to_string(known));
        out[static_cast<size_t>(inferred)] = elements_ / known;
    } else if (known != elements_) {
        throw ConfigError(subject + " has " + std::to_string(known) + " elements but input " +
                          shape_to_string(input_shape, false) + " has " + std::to_string(elements_) +
                          "; the sizes must multiply to the same count");
    }
    return out;
}

void Reshape::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    ctx.backend.copy(y, x, static_cast<size_t>(rows) * elements_ * sizeof(float));
}

void Reshape::backward(const RunContext& ctx, const float*, const float*, const float* dy, float* dx, int rows) {
    if (dx) ctx.backend.copy(dx, dy, static_cast<size_t>(rows) * elements_ * sizeof(float));
}

// reshape: target_shape, one size may be -1.
void add_reshape_layer(LayerRegistry& registry) {
    registry.add("reshape", {"target_shape"}, [](LayerArgs& args) -> std::unique_ptr<Layer> {
        const std::vector<int64_t> target = args.int_list("target_shape");
        int unknown = 0;
        for (int64_t d : target) {
            if (d == -1) ++unknown;
            else if (d <= 0)
                args.fail("target_shape", "sizes must be positive (one may be -1 to infer it), got " +
                                              std::to_string(d));
        }
        if (unknown > 1) args.fail("target_shape", "only one size may be -1");
        args.finish();
        return std::make_unique<Reshape>(target);
    });
}

}  // namespace gputrain::nn
