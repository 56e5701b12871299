#include "export/onnx_graph.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "backend/ops/attention.hpp"
#include "core/error.hpp"
#include "nn/attention.hpp"
#include "nn/dense.hpp"
#include "nn/layer_args.hpp"
#include "nn/spatial.hpp"

namespace gputrain::exporter {

namespace {

using Kind = OnnxAttribute::Kind;

OnnxAttribute attr_int(const std::string& name, int64_t v) { return {name, Kind::integer, v, 0, {}, {}}; }
OnnxAttribute attr_float(const std::string& name, float v) { return {name, Kind::real, 0, v, {}, {}}; }
OnnxAttribute attr_ints(const std::string& name, std::vector<int64_t> v) {
    return {name, Kind::integers, 0, 0, std::move(v), {}};
}

// One layer's nodes: names them "<layer>/<part>", and looks up its settings
// (the resolved config's text) and weights (host copies of the model's tensors).
class LayerEmitter {
public:
    LayerEmitter(OnnxGraph& g, nn::Model& model, const config::LayerSpec& spec, const nn::Layer& layer)
        : g_(g), model_(model), spec_(spec), layer_(layer) {}

    const std::string& name() const { return layer_.name(); }

    [[noreturn]] void fail(const std::string& why) const {
        throw ConfigError("layer '" + name() + "' (" + layer_.type() + "): " + why);
    }

    // A node with one output, named `out` ("" = "<layer>/<op>", made unique).
    std::string node(const std::string& op, std::vector<std::string> inputs, std::vector<OnnxAttribute> attrs = {},
                     std::string out = "") {
        if (out.empty()) out = unique(name() + "/" + op);
        g_.nodes.push_back({op, out, std::move(inputs), {out}, std::move(attrs)});
        return out;
    }

    std::string floats(const std::string& part, std::vector<int64_t> dims, std::vector<float> values) {
        const std::string n = unique(name() + "/" + part);
        g_.initializers.push_back({n, std::move(dims), false, std::move(values), {}});
        return n;
    }
    std::string ints(const std::string& part, std::vector<int64_t> values) {
        const std::string n = unique(name() + "/" + part);
        const int64_t count = static_cast<int64_t>(values.size());
        g_.initializers.push_back({n, {count}, true, {}, std::move(values)});
        return n;
    }

    // The layer's tensor `part` ("kernel"), from the trainable parameters or
    // the state (moving statistics, frozen layers' weights); empty when the
    // layer has none of that name (no bias with use_bias: false).
    std::vector<float> weight(const std::string& part, Shape* shape = nullptr) const {
        const std::string full = name() + "/" + part;
        for (const auto& v : model_.params())
            if (v.name == full) return copy(model_.param_data() + v.offset, v, shape);
        for (const auto& v : model_.state())
            if (v.name == full) return copy(model_.state_data() + v.offset, v, shape);
        return {};
    }
    // A tied dense layer's table: the initializer the embedding `layer`
    // emitted (listed above it, so emitted already), or a copy of the model's tensor.
    std::string tied_table(const std::string& layer) {
        const std::string full = layer + "/embeddings";
        for (const auto& t : g_.initializers)
            if (t.name == full) return full;
        for (const auto& v : model_.params())
            if (v.name == full) return floats("tied_table", v.shape, copy(model_.param_data() + v.offset, v, nullptr));
        for (const auto& v : model_.state())
            if (v.name == full) return floats("tied_table", v.shape, copy(model_.state_data() + v.offset, v, nullptr));
        fail("the checkpoint's model has no tensor '" + full + "' (its tie_weights)");
    }
    std::vector<float> required_weight(const std::string& part, Shape* shape = nullptr) const {
        std::vector<float> w = weight(part, shape);
        if (w.empty()) fail("the checkpoint's model has no tensor '" + name() + "/" + part + "'");
        return w;
    }

    // A resolved setting's text ("3,3", "same", "true", "relu", "1e-05").
    std::string setting(const std::string& key) const {
        for (const auto& [k, v] : spec_.resolved_params)
            if (k == key) return v;
        fail("its resolved setting '" + key + "' is missing");
    }
    bool flag(const std::string& key) const { return setting(key) == "true"; }
    int64_t integer(const std::string& key) const { return std::stoll(setting(key)); }
    double number(const std::string& key) const { return std::stod(setting(key)); }
    nn::IntPair pair(const std::string& key) const {
        const std::string text = setting(key);
        const size_t comma = text.find(',');
        if (comma == std::string::npos) {
            const int64_t v = std::stoll(text);
            return {v, v};
        }
        return {std::stoll(text.substr(0, comma)), std::stoll(text.substr(comma + 1))};
    }

    // activation(x) under the layer's name (its output) or `out`.
    std::string activation(Activation act, const std::string& x, const std::string& out) {
        switch (act) {
            case Activation::linear: return node("Identity", {x}, {}, out);
            case Activation::relu: return node("Relu", {x}, {}, out);
            case Activation::sigmoid: return node("Sigmoid", {x}, {}, out);
            case Activation::tanh: return node("Tanh", {x}, {}, out);
            case Activation::softmax: return node("Softmax", {x}, {attr_int("axis", -1)}, out);
            case Activation::gelu: {
                // Exact GELU (gputrain's, PyTorch's default): x * (1 + erf(x / sqrt 2)) / 2.
                // Opset 17 has no Gelu operator (opset 20 adds it).
                const std::string scaled = node("Mul", {x, floats("inv_sqrt2", {}, {float(1 / std::sqrt(2.0))})});
                const std::string e = node("Erf", {scaled});
                const std::string one_plus = node("Add", {e, floats("one", {}, {1.0f})});
                const std::string half_x = node("Mul", {x, floats("half", {}, {0.5f})});
                return node("Mul", {half_x, one_plus}, {}, out);
            }
        }
        fail("an activation ONNX export does not know");
    }

    Activation activation_setting() const {
        Activation act;
        if (!parse_activation(setting("activation"), act)) fail("unknown activation '" + setting("activation") + "'");
        return act;
    }

private:
    std::vector<float> copy(const float* data, const nn::ParamView& v, Shape* shape) const {
        if (shape) *shape = v.shape;
        return std::vector<float>(data, data + v.count);
    }
    std::string unique(const std::string& base) {
        std::string n = base;
        for (int i = 1; value_taken(n); ++i) n = base + "_" + std::to_string(i);
        return n;
    }
    bool value_taken(const std::string& n) const {
        for (const auto& t : g_.initializers)
            if (t.name == n) return true;
        for (const auto& node : g_.nodes)
            for (const auto& o : node.outputs)
                if (o == n) return true;
        return false;
    }

    OnnxGraph& g_;
    nn::Model& model_;
    const config::LayerSpec& spec_;
    const nn::Layer& layer_;
};

// NHWC <-> NCHW around the ops ONNX defines on NCHW.
const std::vector<int64_t> kToNchw{0, 3, 1, 2};
const std::vector<int64_t> kToNhwc{0, 2, 3, 1};

// ONNX pads [top, left, bottom, right] for Keras' padding rule.
std::vector<int64_t> pads_of(LayerEmitter& e, const Shape& in, nn::IntPair window, nn::IntPair strides,
                             nn::IntPair dilation, nn::Padding padding) {
    nn::WindowAxis h, w;
    if (!nn::window_axis(in[0], window.h, strides.h, dilation.h, padding, h) ||
        !nn::window_axis(in[1], window.w, strides.w, dilation.w, padding, w))
        e.fail("its window does not fit its input");
    if (padding == nn::Padding::valid) return {0, 0, 0, 0};
    const int64_t bottom = std::max<int64_t>(h.extent - in[0] - h.pad_before, 0);
    const int64_t right = std::max<int64_t>(w.extent - in[1] - w.pad_before, 0);
    return {h.pad_before, w.pad_before, bottom, right};
}

nn::Padding padding_of(LayerEmitter& e) {
    const std::string p = e.setting("padding");
    if (p == "same") return nn::Padding::same;
    if (p == "valid") return nn::Padding::valid;
    e.fail("unknown padding '" + p + "'");
}

// A tied layer (tie_weights) multiplies by its embedding's table transposed:
// the table is stored once, in the graph as in the checkpoint.
void emit_dense(LayerEmitter& e, const std::string& x, const std::string& tied_to, const std::string& out) {
    std::string y;
    if (!tied_to.empty()) {
        const std::string table = e.tied_table(tied_to);
        y = e.node("MatMul", {x, e.node("Transpose", {table}, {attr_ints("perm", {1, 0})})});
    } else {
        Shape shape;
        std::vector<float> kernel = e.required_weight("kernel", &shape);
        y = e.node("MatMul", {x, e.floats("kernel", shape, std::move(kernel))});
    }
    Shape bias_shape;
    std::vector<float> bias = e.weight("bias", &bias_shape);
    if (!bias.empty()) y = e.node("Add", {y, e.floats("bias", bias_shape, std::move(bias))});
    e.activation(e.activation_setting(), y, out);
}

void emit_conv2d(LayerEmitter& e, const std::string& x, const Shape& in, const std::string& out) {
    Shape shape;  // [out_c, kh, kw, in_c]
    const std::vector<float> kernel = e.required_weight("kernel", &shape);
    const int64_t oc = shape[0], kh = shape[1], kw = shape[2], ic = shape[3];
    std::vector<float> oihw(kernel.size());
    for (int64_t o = 0; o < oc; ++o)
        for (int64_t r = 0; r < kh; ++r)
            for (int64_t c = 0; c < kw; ++c)
                for (int64_t i = 0; i < ic; ++i)
                    oihw[((o * ic + i) * kh + r) * kw + c] = kernel[((o * kh + r) * kw + c) * ic + i];
    const nn::IntPair window{kh, kw};
    const nn::IntPair strides = e.pair("strides"), dilation = e.pair("dilation_rate");
    std::vector<std::string> inputs{e.node("Transpose", {x}, {attr_ints("perm", kToNchw)}),
                                    e.floats("kernel", {oc, ic, kh, kw}, std::move(oihw))};
    Shape bias_shape;
    std::vector<float> bias = e.weight("bias", &bias_shape);
    if (!bias.empty()) inputs.push_back(e.floats("bias", bias_shape, std::move(bias)));
    const std::string conv =
        e.node("Conv", inputs,
               {attr_ints("kernel_shape", {kh, kw}), attr_ints("strides", {strides.h, strides.w}),
                attr_ints("dilations", {dilation.h, dilation.w}),
                attr_ints("pads", pads_of(e, in, window, strides, dilation, padding_of(e)))});
    const std::string nhwc = e.node("Transpose", {conv}, {attr_ints("perm", kToNhwc)});
    e.activation(e.activation_setting(), nhwc, out);
}

void emit_pool(LayerEmitter& e, const std::string& x, const Shape& in, bool max, const std::string& out) {
    const nn::IntPair window = e.pair("pool_size"), strides = e.pair("strides");
    std::vector<OnnxAttribute> attrs{attr_ints("kernel_shape", {window.h, window.w}),
                                     attr_ints("strides", {strides.h, strides.w}),
                                     attr_ints("pads", pads_of(e, in, window, strides, {1, 1}, padding_of(e)))};
    // Padding never counts toward an average (Keras' 'same' pooling).
    if (!max) attrs.push_back(attr_int("count_include_pad", 0));
    const std::string nchw = e.node("Transpose", {x}, {attr_ints("perm", kToNchw)});
    const std::string pooled = e.node(max ? "MaxPool" : "AveragePool", {nchw}, std::move(attrs));
    e.node("Transpose", {pooled}, {attr_ints("perm", kToNhwc)}, out);
}

// Inference batch norm, folded: y = x * scale + shift per channel (the last axis),
// scale = gamma / sqrt(var + epsilon), shift = beta - mean * scale (in double).
void emit_batch_norm(LayerEmitter& e, const std::string& x, const std::string& out) {
    const std::vector<float> mean = e.required_weight("moving_mean"), var = e.required_weight("moving_variance");
    const std::vector<float> gamma = e.weight("gamma"), beta = e.weight("beta");
    const double eps = e.number("epsilon");
    const size_t c = mean.size();
    std::vector<float> scale(c), shift(c);
    for (size_t i = 0; i < c; ++i) {
        const double s = (gamma.empty() ? 1.0 : gamma[i]) / std::sqrt(static_cast<double>(var[i]) + eps);
        scale[i] = static_cast<float>(s);
        shift[i] = static_cast<float>((beta.empty() ? 0.0 : beta[i]) - mean[i] * s);
    }
    const int64_t channels = static_cast<int64_t>(c);
    const std::string scaled = e.node("Mul", {x, e.floats("scale", {channels}, std::move(scale))});
    e.node("Add", {scaled, e.floats("shift", {channels}, std::move(shift))}, {}, out);
}

void emit_layer_norm(LayerEmitter& e, const std::string& x, int64_t channels, const std::string& out) {
    std::vector<float> gamma = e.weight("gamma"), beta = e.weight("beta");
    if (gamma.empty()) gamma.assign(static_cast<size_t>(channels), 1.0f);
    std::vector<std::string> inputs{x, e.floats("gamma", {channels}, std::move(gamma))};
    if (!beta.empty()) inputs.push_back(e.floats("beta", {channels}, std::move(beta)));
    e.node("LayerNormalization", inputs,
           {attr_int("axis", -1), attr_float("epsilon", static_cast<float>(e.number("epsilon")))}, out);
}

// x / sqrt(mean(x^2) + epsilon) * gamma over the last axis.
void emit_rms_norm(LayerEmitter& e, const std::string& x, const std::string& out) {
    const std::string squares = e.node("Mul", {x, x});
    const std::string mean = e.node("ReduceMean", {squares}, {attr_ints("axes", {-1}), attr_int("keepdims", 1)});
    const std::string shifted =
        e.node("Add", {mean, e.floats("epsilon", {}, {static_cast<float>(e.number("epsilon"))})});
    const std::string rstd = e.node("Reciprocal", {e.node("Sqrt", {shifted})});
    std::vector<float> gamma = e.weight("gamma");
    if (gamma.empty()) {
        e.node("Mul", {x, rstd}, {}, out);
        return;
    }
    const int64_t c = static_cast<int64_t>(gamma.size());
    e.node("Mul", {e.node("Mul", {x, rstd}), e.floats("gamma", {c}, std::move(gamma))}, {}, out);
}

// GPT's masked multi-head self-attention (nn/attention.hpp) on (N, T, C):
// qkv = x W + b split into q, k, v; per head softmax(q k^T / sqrt(D) + mask) v;
// the heads side by side, then the output projection.
void emit_attention(LayerEmitter& e, const std::string& x, const Shape& in, const std::string& out, bool rotary) {
    const int64_t T = in[0], C = in[1], H = e.integer("heads"), D = C / H;
    Shape qkv_shape, out_shape;
    std::vector<float> qkv_kernel = e.required_weight("qkv_kernel", &qkv_shape);
    std::vector<float> out_kernel = e.required_weight("out_kernel", &out_shape);
    std::string qkv = e.node("MatMul", {x, e.floats("qkv_kernel", qkv_shape, std::move(qkv_kernel))});
    std::vector<float> qkv_bias = e.weight("qkv_bias");
    if (!qkv_bias.empty()) qkv = e.node("Add", {qkv, e.floats("qkv_bias", {3 * C}, std::move(qkv_bias))});
    // (N, T, 3C) -> (N, T, 3, H, D) -> (3, N, H, T, D)
    const std::string split = e.node("Reshape", {qkv, e.ints("qkv_shape", {0, T, 3, H, D})});
    const std::string heads = e.node("Transpose", {split}, {attr_ints("perm", {2, 0, 3, 1, 4})});
    const auto part = [&](int64_t i, const std::string& what) {
        return e.node("Gather", {heads, e.ints(what + "_index", {i})}, {attr_int("axis", 0)});
    };
    // Gather with a 1-element index keeps that axis: (1, N, H, T, D); squeeze it.
    const std::string axis0 = e.ints("axis0", {0});
    std::string q = e.node("Squeeze", {part(0, "q"), axis0});
    std::string k = e.node("Squeeze", {part(1, "k"), axis0});
    const std::string v = e.node("Squeeze", {part(2, "v"), axis0});
    if (rotary) {
        // RoPE (GPT-NeoX's half split, ops/attention.hpp) as x * cos + rotate_half(x) * sin,
        // rotate_half(x) = [-x[D/2:], x[:D/2]], with constants cos and sin [T, D] (pair i's
        // angle at columns i and i + D/2) broadcast over (N, H).
        const int64_t half = D / 2;
        std::vector<float> cosines(static_cast<size_t>(T * D)), sines(cosines.size());
        for (int64_t t = 0; t < T; ++t)
            for (int64_t i = 0; i < half; ++i) {
                float c = 0.0f, s = 0.0f;
                ops::rotary_cos_sin(t, static_cast<int>(i), static_cast<int>(D), &c, &s);
                const size_t at = static_cast<size_t>(t * D + i);
                cosines[at] = cosines[at + static_cast<size_t>(half)] = c;
                sines[at] = sines[at + static_cast<size_t>(half)] = s;
            }
        const std::string cos_t = e.floats("rotary_cos", {T, D}, std::move(cosines));
        const std::string sin_t = e.floats("rotary_sin", {T, D}, std::move(sines));
        const std::string last_axis = e.ints("rotary_axes", {-1});
        const std::string at_0 = e.ints("rotary_start", {0}), at_half = e.ints("rotary_half", {half}),
                          at_end = e.ints("rotary_end", {D});
        const auto turn = [&](const std::string& x) {
            const std::string first = e.node("Slice", {x, at_0, at_half, last_axis});
            const std::string second = e.node("Slice", {x, at_half, at_end, last_axis});
            const std::string rotated =
                e.node("Concat", {e.node("Neg", {second}), first}, {attr_int("axis", -1)});
            return e.node("Add", {e.node("Mul", {x, cos_t}), e.node("Mul", {rotated, sin_t})});
        };
        q = turn(q);
        k = turn(k);
    }
    const std::string kt = e.node("Transpose", {k}, {attr_ints("perm", {0, 1, 3, 2})});
    const std::string scores = e.node(
        "Mul", {e.node("MatMul", {q, kt}), e.floats("scale", {}, {1.0f / std::sqrt(static_cast<float>(D))})});
    // The causal mask: a large negative number above the diagonal (exp gives 0).
    std::vector<float> mask(static_cast<size_t>(T * T), 0.0f);
    for (int64_t i = 0; i < T; ++i)
        for (int64_t j = i + 1; j < T; ++j) mask[static_cast<size_t>(i * T + j)] = -1e30f;
    const std::string masked = e.node("Add", {scores, e.floats("causal_mask", {T, T}, std::move(mask))});
    const std::string probs = e.node("Softmax", {masked}, {attr_int("axis", -1)});
    const std::string o = e.node("MatMul", {probs, v});                                 // (N, H, T, D)
    const std::string joined = e.node("Transpose", {o}, {attr_ints("perm", {0, 2, 1, 3})});  // (N, T, H, D)
    const std::string flat = e.node("Reshape", {joined, e.ints("heads_shape", {0, T, C})});
    std::vector<float> out_bias = e.weight("out_bias");
    if (out_bias.empty()) {
        e.node("MatMul", {flat, e.floats("out_kernel", out_shape, std::move(out_kernel))}, {}, out);
        return;
    }
    const std::string projected = e.node("MatMul", {flat, e.floats("out_kernel", out_shape, std::move(out_kernel))});
    e.node("Add", {projected, e.floats("out_bias", {C}, std::move(out_bias))}, {}, out);
}

std::string text_of(const std::vector<double>& values) {
    std::ostringstream s;
    s.precision(9);
    for (size_t i = 0; i < values.size(); ++i) s << (i ? "," : "") << values[i];
    return s.str();
}

}  // namespace

OnnxGraph onnx_graph(nn::Model& model, const config::RunConfig& cfg) {
    if (cfg.model.layers.size() != model.layer_count())
        throw Error("onnx export: the config's " + std::to_string(cfg.model.layers.size()) + " layers are not the "
                    "model's " + std::to_string(model.layer_count()));
    OnnxGraph g;
    g.name = std::filesystem::path(cfg.source_file).stem().string();
    if (g.name.empty()) g.name = "gputrain";
    g.input_dims = model.input_shape();
    g.output_dims = model.output_shape();

    std::vector<std::string> value(model.layer_count() + 1);  // per tensor: its ONNX value's name
    value[0] = "input";
    for (size_t i = 0; i < model.layer_count(); ++i) {
        const std::vector<int>& reads = model.graph().inputs[i];
        if (std::find(reads.begin(), reads.end(), 0) == reads.end()) continue;
        g.input_ids = model.layer(i).type() == "embedding";
        if (!g.input_ids) break;
    }
    for (size_t i = 0; i < model.layer_count(); ++i) {
        const nn::Layer& layer = model.layer(i);
        LayerEmitter e(g, model, cfg.model.layers[i], layer);
        const std::vector<int>& reads = model.graph().inputs[i];
        const std::string& x = value[static_cast<size_t>(reads[0])];
        const Shape& in = model.tensor_shape(reads[0]);
        const std::string out = layer.name();
        const std::string type = layer.type();
        Activation act;
        if (type == "dense") {
            const auto* dense = dynamic_cast<const nn::Dense*>(&layer);
            emit_dense(e, x, dense ? dense->tied_to() : "", out);
        } else if (type == "conv2d") {
            emit_conv2d(e, x, in, out);
        } else if (type == "max_pool2d" || type == "avg_pool2d") {
            emit_pool(e, x, in, type == "max_pool2d", out);
        } else if (type == "global_avg_pool2d") {
            e.node("ReduceMean", {x}, {attr_ints("axes", {1, 2}), attr_int("keepdims", 0)}, out);
        } else if (type == "batch_norm") {
            emit_batch_norm(e, x, out);
        } else if (type == "flatten") {
            e.node("Flatten", {x}, {attr_int("axis", 1)}, out);
        } else if (type == "reshape") {
            std::vector<int64_t> dims{-1};
            for (int64_t d : model.layer_output_shape(i)) dims.push_back(d);
            e.node("Reshape", {x, e.ints("shape", dims)}, {}, out);
        } else if (type == "dropout") {
            e.node("Identity", {x}, {}, out);  // inference: dropout does nothing
        } else if (type == "add" || type == "multiply" || type == "concatenate") {
            std::vector<std::string> xs;
            for (int t : reads) xs.push_back(value[static_cast<size_t>(t)]);
            if (type == "add") {
                e.node("Sum", xs, {}, out);
            } else if (type == "concatenate") {
                e.node("Concat", xs, {attr_int("axis", -1)}, out);
            } else {
                std::string product = xs[0];
                for (size_t j = 1; j < xs.size(); ++j)
                    product = e.node("Mul", {product, xs[j]}, {}, j + 1 == xs.size() ? out : "");
            }
        } else if (type == "embedding") {
            // The file's int64 input, or floats (whole numbers) from another layer, cast to int64.
            Shape shape;
            std::vector<float> table = e.required_weight("embeddings", &shape);
            const bool int64 = g.input_ids && reads[0] == 0;
            const std::string ids = int64 ? x : e.node("Cast", {x}, {attr_int("to", 7 /* INT64 */)});
            e.node("Gather", {e.floats("embeddings", shape, std::move(table)), ids}, {attr_int("axis", 0)}, out);
        } else if (type == "positional_embedding") {
            // The table's first T rows (the input's positions), added to every sample.
            Shape shape;
            std::vector<float> table = e.required_weight("embeddings", &shape);
            const int64_t T = in[0], C = shape[1];
            table.resize(static_cast<size_t>(T * C));
            e.node("Add", {x, e.floats("embeddings", {T, C}, std::move(table))}, {}, out);
        } else if (type == "layer_norm") {
            emit_layer_norm(e, x, in.back(), out);
        } else if (type == "rms_norm") {
            emit_rms_norm(e, x, out);
        } else if (type == "causal_self_attention") {
            if (in.size() != 2) e.fail("attention over an input of shape " + shape_to_string(in) + " has no ONNX form");
            const auto* attention = dynamic_cast<const nn::CausalSelfAttention*>(&layer);
            emit_attention(e, x, in, out, attention && attention->rotary());
        } else if (parse_activation(type, act)) {
            e.activation(act, x, out);
        } else {
            e.fail("ONNX export does not know this layer type yet");
        }
        value[i + 1] = out;
    }

    // What predict writes: a crossentropy model's logits become probabilities
    // (the model's own softmax, fused into the loss in training, is in the
    // graph already from its layer's settings).
    const std::string& last = value.back();
    const bool softmax_layer = model.fused_softmax() || model.softmax_under_logits_loss();
    const bool probabilities =
        model.loss().is_cross_entropy() && model.loss().from_logits() && !softmax_layer;
    g.nodes.push_back({probabilities ? "Softmax" : "Identity", "output", {last}, {"output"},
                       probabilities ? std::vector<OnnxAttribute>{attr_int("axis", -1)} : std::vector<OnnxAttribute>{}});

    std::ostringstream scale;
    scale.precision(9);
    scale << cfg.data.scale_for(false);
    // A text model takes token ids as they are: no scale or normalization to tell of.
    const bool text = cfg.data.format == config::DataFormat::text;
    g.metadata = {{"gputrain.config", cfg.source_file},
                  {"gputrain.output", probabilities || softmax_layer ? "probabilities" : "outputs"}};
    if (!text) g.metadata.insert(g.metadata.begin() + 1, {"gputrain.scale", cfg.data.scale_auto ? "auto" : scale.str()});
    if (!text && !cfg.data.normalize_mean.empty()) {
        g.metadata.push_back({"gputrain.normalize_mean", text_of(cfg.data.normalize_mean)});
        g.metadata.push_back({"gputrain.normalize_std", text_of(cfg.data.normalize_std)});
    }
    g.doc = "gputrain model '" + g.name + "': input (N" ;
    for (int64_t d : g.input_dims) g.doc += ", " + std::to_string(d);
    g.doc += g.input_ids ? ") int64 token ids; output (N"
             : text      ? ") float32 token ids; output (N"
                         : ") float32 after data.scale and data.normalize (see metadata); output (N";
    for (int64_t d : g.output_dims) g.doc += ", " + std::to_string(d);
    g.doc += std::string(") ") + (probabilities || softmax_layer ? "class probabilities" : "outputs");
    return g;
}

}  // namespace gputrain::exporter
