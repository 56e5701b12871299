#include "nn/layer_norm.hpp"

#include <cstddef>

#include "backend/ops/normalization.hpp"
#include "core/error.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

LayerNorm::LayerNorm(const LayerNormSettings& s) : s_(s) {
    if (s_.rms) s_.center = false;  // RMS normalization has no offset
}

Shape LayerNorm::build(const Shape& input_shape) {
    if (input_shape.empty())
        throw ConfigError("layer '" + name_ + "' (" + type() + "): input has no axes; give model.input_shape");
    channels_ = static_cast<int>(input_shape.back());
    rows_per_sample_ = shape_elements(input_shape) / channels_;
    return input_shape;
}

std::vector<ParamSpec> LayerNorm::param_specs() const {
    const Shape c{channels_};
    std::vector<ParamSpec> specs;
    if (s_.scale) specs.push_back({"gamma", c, Init::ones});
    if (s_.center) specs.push_back({"beta", c, Init::zeros});
    return specs;
}

void LayerNorm::bind(const std::vector<float*>& params, const std::vector<float*>& grads) {
    size_t i = 0;
    if (s_.scale) {
        gamma_ = params[i];
        gamma_grad_ = grads[i++];
    }
    if (s_.center) {
        beta_ = params[i];
        beta_grad_ = grads[i];
    }
}

size_t LayerNorm::workspace_bytes(Backend&, int64_t max_rows) {
    return ops::layer_norm_backward_scratch_floats(max_rows * rows_per_sample_, channels_) * sizeof(float);
}

void LayerNorm::set_workspace(void* workspace, size_t bytes) {
    workspace_ = static_cast<float*>(workspace);
    workspace_floats_ = workspace ? bytes / sizeof(float) : 0;
}

void LayerNorm::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    const int m = static_cast<int>(rows * rows_per_sample_);
    float* mean = s_.rms ? nullptr : scratch_;
    float* rstd = s_.rms ? scratch_ : scratch_ + m;
    run_op(ctx.backend, ops::LayerNormForward{x, gamma_, beta_, y, mean, rstd, m, channels_,
                                              static_cast<float>(s_.epsilon), s_.rms});
}

void LayerNorm::backward(const RunContext& ctx, const float* x, const float*, const float* dy, float* dx,
                         int rows) {
    const int m = static_cast<int>(rows * rows_per_sample_);
    const float* mean = s_.rms ? nullptr : scratch_;
    const float* rstd = s_.rms ? scratch_ : scratch_ + m;
    run_op(ctx.backend, ops::LayerNormBackward{x, dy, mean, rstd, gamma_, dx, gamma_grad_, beta_grad_, m, channels_,
                                               s_.rms, workspace_, workspace_floats_});
}

namespace {

// epsilon: in (0, 1) and not 0 in float32 (the kernels add it in fp32).
double read_epsilon(LayerArgs& args, double fallback, const std::string& example) {
    const double eps = args.number("epsilon", fallback, 0.0, 1.0);
    if (eps <= 0.0) args.fail("epsilon", "must be positive (e.g. epsilon: " + example + ")");
    if (static_cast<float>(eps) == 0.0f)
        args.fail("epsilon", "is 0 in float32 (below 1.4e-45); give at least 1e-38, e.g. epsilon: " + example);
    return eps;
}

}  // namespace

// layer_norm: Keras' LayerNormalization keys (epsilon, center, scale) with
// PyTorch's epsilon; rms_norm: Keras' RMSNormalization (epsilon).
void add_layer_norm_layers(LayerRegistry& registry) {
    registry.add("layer_norm", {"epsilon", "center", "scale", "trainable", "lr_multiplier"}, [](LayerArgs& args) -> std::unique_ptr<Layer> {
        LayerNormSettings s;
        s.epsilon = read_epsilon(args, 1e-5, "1e-5");
        s.center = args.flag("center", true);
        s.scale = args.flag("scale", true);
        args.finish();
        return std::make_unique<LayerNorm>(s);
    });
    registry.add("rms_norm", {"epsilon", "trainable", "lr_multiplier"}, [](LayerArgs& args) -> std::unique_ptr<Layer> {
        LayerNormSettings s;
        s.rms = true;
        s.center = false;
        s.epsilon = read_epsilon(args, 1e-6, "1e-6");
        args.finish();
        return std::make_unique<LayerNorm>(s);
    });
}

}  // namespace gputrain::nn
