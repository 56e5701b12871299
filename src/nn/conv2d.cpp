#include "nn/conv2d.hpp"

#include <cstdint>

#include "core/error.hpp"
#include "nn/activation_step.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

namespace {

std::string pair_text(const IntPair& p) { return std::to_string(p.h) + "x" + std::to_string(p.w); }

}  // namespace

std::string Conv2d::detail() const {
    // Appended piece by piece: GCC 12 warns (-Wrestrict) on "literal" + std::string here.
    std::string d = pair_text(s_.kernel);
    d += ' ';
    d += padding_name(s_.padding);
    if (s_.strides.h != 1 || s_.strides.w != 1) d.append(" stride ").append(pair_text(s_.strides));
    if (s_.dilation.h != 1 || s_.dilation.w != 1) d.append(" dilation ").append(pair_text(s_.dilation));
    if (s_.activation != Activation::linear) d.append(" ").append(activation_name(s_.activation));
    return d;
}

Shape Conv2d::build(const Shape& input_shape) {
    require_image_input(name_, type(), input_shape);
    if ((s_.strides.h != 1 || s_.strides.w != 1) && (s_.dilation.h != 1 || s_.dilation.w != 1))
        throw ConfigError("layer '" + name_ + "' (conv2d): strides " + pair_text(s_.strides) + " with dilation_rate " +
                          pair_text(s_.dilation) + "; Keras allows a stride above 1 or a dilation above 1, not both");
    WindowAxis h, w;
    if (!window_axis(input_shape[0], s_.kernel.h, s_.strides.h, s_.dilation.h, s_.padding, h) ||
        !window_axis(input_shape[1], s_.kernel.w, s_.strides.w, s_.dilation.w, s_.padding, w)) {
        std::string kernel = "kernel " + pair_text(s_.kernel);
        if (s_.dilation.h != 1 || s_.dilation.w != 1) kernel += " (dilation " + pair_text(s_.dilation) + ")";
        throw ConfigError("layer '" + name_ + "' (conv2d): " + kernel + " is larger than its input " +
                          shape_to_string(input_shape, false) +
                          " with padding valid; use a smaller kernel_size or padding: same");
    }
    std::string window = "kernel " + pair_text(s_.kernel) + " stride " + pair_text(s_.strides) + " dilation " +
                         pair_text(s_.dilation) + " padding " + padding_name(s_.padding);
    require_int_extent(name_, type(), window, h, w);
    // One output pixel's patch is a GEMM's inner size (an int), and a sample's
    // patches the CPU's im2col columns: both must stay countable.
    int64_t patch = 0, columns = 0;
    const bool patch_fits = elements_within({s_.kernel.h, s_.kernel.w, input_shape[2]}, INT32_MAX, patch);
    if (!patch_fits || !elements_within({patch, h.out, w.out}, int64_t{1} << 40, columns))
        throw ConfigError("layer '" + name_ + "' (conv2d): kernel " + pair_text(s_.kernel) + " over " +
                          std::to_string(input_shape[2]) + " input channels makes " +
                          (patch_fits ? "patches of " + std::to_string(patch) + " values, " +
                                            std::to_string(h.out * w.out) + " a sample: more than 2^40 values"
                                      : std::string("patches of more than 2147483647 values")) +
                          ", more than can be indexed; use a smaller kernel_size or fewer channels");
    g_.in_h = static_cast<int>(input_shape[0]);
    g_.in_w = static_cast<int>(input_shape[1]);
    g_.in_c = static_cast<int>(input_shape[2]);
    g_.out_h = static_cast<int>(h.out);
    g_.out_w = static_cast<int>(w.out);
    g_.out_c = static_cast<int>(s_.filters);
    g_.kernel_h = static_cast<int>(s_.kernel.h);
    g_.kernel_w = static_cast<int>(s_.kernel.w);
    g_.stride_h = static_cast<int>(s_.strides.h);
    g_.stride_w = static_cast<int>(s_.strides.w);
    g_.dilation_h = static_cast<int>(s_.dilation.h);
    g_.dilation_w = static_cast<int>(s_.dilation.w);
    g_.pad_top = static_cast<int>(h.pad_before);
    g_.pad_left = static_cast<int>(w.pad_before);
    return {h.out, w.out, s_.filters};
}

std::vector<ParamSpec> Conv2d::param_specs() const {
    const int64_t receptive = s_.kernel.h * s_.kernel.w;
    ParamSpec kernel{"kernel", {s_.filters, s_.kernel.h, s_.kernel.w, g_.in_c}, Init::glorot_uniform};
    kernel.fan_in = receptive * g_.in_c;
    kernel.fan_out = receptive * s_.filters;
    std::vector<ParamSpec> specs{kernel};
    if (s_.use_bias) specs.push_back({"bias", {s_.filters}, Init::zeros});
    return specs;
}

void Conv2d::bind(const std::vector<float*>& params, const std::vector<float*>& grads) {
    kernel_ = params[0];
    kernel_grad_ = grads[0];
    if (s_.use_bias) {
        bias_ = params[1];
        bias_grad_ = grads[1];
    }
}

int64_t Conv2d::scratch_per_sample() const {
    return s_.activation == Activation::linear ? 0 : out_pixels() * s_.filters;
}

Conv2dGeometry Conv2d::geometry(int rows) const {
    Conv2dGeometry g = g_;
    g.batch = rows;
    return g;
}

size_t Conv2d::workspace_bytes(Backend& backend, int64_t max_rows) {
    return backend.conv2d_workspace_bytes(geometry(static_cast<int>(max_rows)));
}

void Conv2d::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    Backend& be = ctx.backend;
    const Conv2dGeometry g = geometry(rows);
    const int pixels = static_cast<int>(rows * out_pixels()), channels = g.out_c;
    float* z = s_.activation == Activation::linear ? y : pre_activation_;
    be.conv2d_forward(g, x, kernel_, z, workspace_, workspace_bytes_);
    bias_activation_step_forward(be, s_.activation, z, s_.use_bias ? bias_ : nullptr, y, pixels, channels,
                                 ctx.fused);
}

void Conv2d::backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx, int rows) {
    Backend& be = ctx.backend;
    const Conv2dGeometry g = geometry(rows);
    const int pixels = static_cast<int>(rows * out_pixels()), channels = g.out_c;
    const float* dz = activation_bias_step_backward(be, s_.activation, pre_activation_, y, dy, pre_activation_,
                                                    s_.use_bias ? bias_grad_ : nullptr, pixels, channels, ctx.fused);
    be.conv2d_backward_filter(g, x, dz, kernel_grad_, workspace_, workspace_bytes_);
    if (dx) be.conv2d_backward_data(g, dz, kernel_, dx, workspace_, workspace_bytes_);
}

// conv2d: filters, kernel_size, strides, padding, dilation_rate, use_bias, activation.
void add_conv2d_layer(LayerRegistry& registry) {
    registry.add("conv2d", {"filters", "kernel_size", "strides", "padding", "dilation_rate", "use_bias", "activation", "trainable", "lr_multiplier"}, [](LayerArgs& args) -> std::unique_ptr<Layer> {
        Conv2dSettings s;
        s.filters = args.positive_int("filters");
        s.kernel = args.int_pair("kernel_size", std::nullopt);
        s.strides = args.int_pair("strides", IntPair{1, 1});
        s.padding = read_padding(args);
        s.dilation = args.int_pair("dilation_rate", IntPair{1, 1});
        s.use_bias = args.flag("use_bias", true);
        s.activation = args.activation("activation", Activation::linear);
        args.finish();
        return std::make_unique<Conv2d>(s);
    });
}

}  // namespace gputrain::nn
