#include "nn/batch_norm.hpp"

#include <cstddef>

#include "core/error.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

Shape BatchNorm::build(const Shape& input_shape) {
    if (input_shape.empty())
        throw ConfigError("layer '" + name_ + "' (batch_norm): input has no axes; give model.input_shape");
    channels_ = static_cast<int>(input_shape.back());
    rows_per_sample_ = shape_elements(input_shape) / channels_;
    return input_shape;
}

std::vector<ParamSpec> BatchNorm::param_specs() const {
    const Shape c{channels_};
    std::vector<ParamSpec> specs;
    if (s_.scale) specs.push_back({"gamma", c, Init::ones});
    if (s_.center) specs.push_back({"beta", c, Init::zeros});
    ParamSpec mean{"moving_mean", c, Init::zeros};
    ParamSpec var{"moving_variance", c, Init::ones};
    mean.trainable = var.trainable = false;
    specs.push_back(mean);
    specs.push_back(var);
    return specs;
}

void BatchNorm::bind(const std::vector<float*>& params, const std::vector<float*>& grads) {
    size_t i = 0;
    if (s_.scale) {
        gamma_ = params[i];
        gamma_grad_ = grads[i++];
    }
    if (s_.center) {
        beta_ = params[i];
        beta_grad_ = grads[i++];
    }
    moving_mean_ = params[i++];
    moving_var_ = params[i];
}

void BatchNorm::set_scratch(float* scratch) {
    const ptrdiff_t c = channels_;  // 2 * c and more overflow an int past 2^30 channels
    stats_ = scratch;
    mean_invstd_ = stats_ + 2 * c + 1;
    grad_sums_ = mean_invstd_ + 2 * c;
    ones_ = grad_sums_ + 2 * c;
    zeros_ = ones_ + c;
    if (!s_.scale) gamma_ = ones_;
    if (!s_.center) beta_ = zeros_;
}

void BatchNorm::fill_constants(Backend& backend) {
    // The scratch holds no values until a layer writes them; the stand-ins for
    // an absent gamma/beta are C floats, cheap to write on every call.
    if (!s_.scale) backend.fill(ones_, static_cast<size_t>(channels_), 1.0f);
    if (!s_.center) backend.fill(zeros_, static_cast<size_t>(channels_), 0.0f);
}

void BatchNorm::finalize(const RunContext& ctx, int rows_here) {
    Backend& be = ctx.backend;
    const int c = channels_;
    count_ = static_cast<float>(rows_here);
    if (syncing(ctx)) {
        // The count travels with the sums: replicas' shards differ in size.
        be.fill(stats_ + 2 * c, 1, count_);
        ctx.cross_replica->allreduce_sum(stats_, static_cast<size_t>(2 * c + 1));
        be.copy_to_host(&count_, stats_ + 2 * c, sizeof(float));
    }
    be.batch_norm_finalize(stats_, count_, c, static_cast<float>(s_.epsilon), static_cast<float>(s_.momentum),
                           moving_mean_, mean_invstd_, moving_mean_, moving_var_);
}

void BatchNorm::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    Backend& be = ctx.backend;
    const int m = static_cast<int>(rows * rows_per_sample_);
    fill_constants(be);
    if (!ctx.training) {
        be.batch_norm_inference(x, moving_mean_, moving_var_, static_cast<float>(s_.epsilon), gamma_, beta_, y, m,
                                channels_);
        return;
    }
    // Around the moving mean: the same on every replica (so the group's sums
    // add up), saved in checkpoints (so a resumed run sums as the straight one
    // did), and nearer the batch mean than 0 as training goes on.
    be.batch_norm_sums(x, m, channels_, moving_mean_, stats_);
    finalize(ctx, m);
    be.batch_norm_apply(x, mean_invstd_, gamma_, beta_, y, m, channels_);
}

void BatchNorm::backward(const RunContext& ctx, const float* x, const float*, const float* dy, float* dx,
                         int rows) {
    Backend& be = ctx.backend;
    const int c = channels_, m = static_cast<int>(rows * rows_per_sample_);
    be.batch_norm_backward_sums(x, dy, mean_invstd_, m, c, grad_sums_);
    // dgamma and dbeta are this replica's own sums, taken before the group's.
    if (s_.scale) be.copy(gamma_grad_, grad_sums_ + c, static_cast<size_t>(c) * sizeof(float));
    if (s_.center) be.copy(beta_grad_, grad_sums_, static_cast<size_t>(c) * sizeof(float));
    if (syncing(ctx)) ctx.cross_replica->allreduce_sum(grad_sums_, static_cast<size_t>(2 * c));
    if (dx) be.batch_norm_backward_data(x, dy, mean_invstd_, gamma_, grad_sums_, count_, dx, m, c);
}

void BatchNorm::forward_without_rows(const RunContext& ctx) {
    if (!ctx.training || !syncing(ctx)) return;
    // Zero sums and count: the group's statistics (and so the moving ones)
    // come out the same here as on the replicas that have rows.
    ctx.backend.fill(stats_, static_cast<size_t>(2 * channels_), 0.0f);
    finalize(ctx, 0);
}

void BatchNorm::backward_without_rows(const RunContext& ctx) {
    if (!ctx.training || !syncing(ctx)) return;
    ctx.backend.fill(grad_sums_, static_cast<size_t>(2 * channels_), 0.0f);
    ctx.cross_replica->allreduce_sum(grad_sums_, static_cast<size_t>(2 * channels_));
}

// batch_norm: Keras' momentum, epsilon, center, scale; sync across replicas.
void add_batch_norm_layer(LayerRegistry& registry) {
    registry.add("batch_norm", {"momentum", "epsilon", "center", "scale", "sync", "trainable", "lr_multiplier"}, [](LayerArgs& args) -> std::unique_ptr<Layer> {
        BatchNormSettings s;
        s.momentum = args.number("momentum", s.momentum, 0.0, 1.0);
        if (static_cast<float>(s.momentum) >= 1.0f)  // the moving statistics are updated in fp32
            args.fail("momentum", "is 1 in float32, so the moving statistics would never change; give at most "
                                  "0.9999999");
        s.epsilon = args.number("epsilon", s.epsilon, 0.0, 1.0);
        if (s.epsilon <= 0.0) args.fail("epsilon", "must be positive (e.g. epsilon: 0.001)");
        if (static_cast<float>(s.epsilon) == 0.0f)  // computed in fp32
            args.fail("epsilon", "is 0 in float32 (below 1.4e-45); give at least 1e-38, e.g. epsilon: 0.001");
        s.center = args.flag("center", true);
        s.scale = args.flag("scale", true);
        s.sync = args.flag("sync", false);
        args.finish();
        return std::make_unique<BatchNorm>(s);
    });
}

}  // namespace gputrain::nn
