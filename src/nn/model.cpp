#include "nn/model.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

Model::Model(const config::ModelConfig& model, const config::LossConfig& loss, Backend& backend, int64_t max_rows,
             uint64_t init_seed)
    : backend_(backend), loss_(loss), input_shape_(model.input_shape), max_rows_(max_rows) {
    if (model.layers.empty()) throw ConfigError("model.layers: the model has no layers; add at least one");
    for (int64_t d : input_shape_)
        if (d <= 0) throw ConfigError("model.input_shape: every dimension must be positive");

    // Build the layers, naming them like Keras (dense, dense_1, ...).
    std::map<std::string, int> type_counts;
    std::set<std::string> names;
    Shape shape = input_shape_;
    for (size_t i = 0; i < model.layers.size(); ++i) {
        const auto& spec = model.layers[i];
        auto layer = builtin_layers().create(spec, static_cast<int>(i));
        std::string name = spec.name;
        if (name.empty()) {
            const int n = type_counts[spec.type]++;
            name = n == 0 ? spec.type : spec.type + "_" + std::to_string(n);
            while (names.count(name)) name = spec.type + "_" + std::to_string(type_counts[spec.type]++);
        } else if (names.count(name)) {
            LayerArgs(spec, static_cast<int>(i)).fail("name", "duplicate layer name '" + name + "'; names must be unique");
        }
        names.insert(name);
        layer->set_name(name);
        layer->set_index(static_cast<int>(i));
        shape = layer->build(shape);
        shapes_.push_back(shape);
        layers_.push_back(std::move(layer));
    }

    if (loss_.is_cross_entropy() && !loss_.from_logits() && layers_.back()->strip_final_softmax()) {
        fused_softmax_ = true;
        loss_.set_from_logits(true);
    }

    // One flat buffer of parameters, one of gradients, with a named view per parameter.
    std::vector<std::vector<size_t>> layer_views(layers_.size());
    for (size_t i = 0; i < layers_.size(); ++i) {
        for (const auto& spec : layers_[i]->param_specs()) {
            ParamView v{layers_[i]->name() + "/" + spec.name, spec.shape, param_count_,
                        static_cast<size_t>(shape_elements(spec.shape))};
            param_count_ += v.count;
            layer_views[i].push_back(views_.size());
            views_.push_back(v);
            specs_.push_back(spec);
        }
    }
    params_ = backend_.allocate_floats(param_count_);
    grads_ = backend_.allocate_floats(param_count_);
    for (size_t i = 0; i < layers_.size(); ++i) {
        std::vector<float*> p, g;
        for (size_t v : layer_views[i]) {
            p.push_back(params_ + views_[v].offset);
            g.push_back(grads_ + views_[v].offset);
        }
        layers_[i]->bind(p, g);
    }

    // Activations, per-layer scratch and the two activation-gradient buffers.
    int64_t widest = shape_elements(input_shape_), scratch = 0;
    for (size_t i = 0; i < layers_.size(); ++i) {
        const int64_t n = shape_elements(shapes_[i]);
        widest = std::max(widest, n);
        activations_.push_back(backend_.allocate_floats(static_cast<size_t>(max_rows_ * n)));
        activation_floats_ += static_cast<size_t>(max_rows_ * n);
        scratch += layers_[i]->scratch_per_sample();
    }
    scratch_floats_ = static_cast<size_t>(std::max<int64_t>(1, max_rows_ * scratch));
    scratch_ = backend_.allocate_floats(scratch_floats_);
    float* s = scratch_;
    for (auto& layer : layers_) {
        layer->set_scratch(s);
        s += max_rows_ * layer->scratch_per_sample();
    }
    grad_a_ = backend_.allocate_floats(static_cast<size_t>(max_rows_ * widest));
    grad_b_ = backend_.allocate_floats(static_cast<size_t>(max_rows_ * widest));
    activation_floats_ += 2 * static_cast<size_t>(max_rows_ * widest);

    initialize(init_seed);
}

Model::~Model() {
    for (float* a : activations_) backend_.release(a);
    backend_.release(scratch_);
    backend_.release(grad_a_);
    backend_.release(grad_b_);
    backend_.release(params_);
    backend_.release(grads_);
}

void Model::initialize(uint64_t seed) {
    // Host-side so every backend starts from identical weights for a seed.
    Rng rng(seed);
    std::vector<float> host(param_count_);
    for (size_t v = 0; v < views_.size(); ++v) {
        float* out = host.data() + views_[v].offset;
        const size_t n = views_[v].count;
        switch (specs_[v].init) {
            case Init::zeros:
                std::fill(out, out + n, 0.0f);
                break;
            case Init::ones:
                std::fill(out, out + n, 1.0f);
                break;
            case Init::glorot_uniform: {
                const Shape& sh = views_[v].shape;
                const double fan_out = static_cast<double>(sh.back());
                const double fan_in = static_cast<double>(shape_elements(sh)) / fan_out;
                const float limit = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
                for (size_t i = 0; i < n; ++i) out[i] = (2.0f * rng.uniform() - 1.0f) * limit;
                break;
            }
        }
    }
    backend_.copy_to_device(params_, host.data(), param_count_ * sizeof(float));
}

void Model::forward(const RunContext& ctx, const float* inputs, int rows) {
    const float* x = inputs;
    for (size_t i = 0; i < layers_.size(); ++i) {
        layers_[i]->forward(ctx, x, activations_[i], rows);
        x = activations_[i];
    }
}

void Model::forward_backward(const RunContext& ctx, const float* inputs, const int32_t* labels, int rows,
                             float grad_scale, float* stats) {
    if (rows == 0) {
        // An empty shard still contributes (zero) gradients to the all-reduce.
        backend_.fill(grads_, param_count_, 0.0f);
        return;
    }
    forward(ctx, inputs, rows);
    float* dy = grad_a_;
    float* spare = grad_b_;
    loss_.compute(backend_, activations_.back(), labels, rows, static_cast<int>(classes()), grad_scale, dy, stats);
    for (size_t i = layers_.size(); i-- > 0;) {
        const float* x = i == 0 ? inputs : activations_[i - 1];
        float* dx = i == 0 ? nullptr : spare;  // the input needs no gradient
        layers_[i]->backward(ctx, x, activations_[i], dy, dx, rows);
        std::swap(dy, spare);
    }
}

void Model::evaluate(const RunContext& ctx, const float* inputs, const int32_t* labels, int rows, float* stats) {
    if (rows == 0) return;
    forward(ctx, inputs, rows);
    loss_.compute(backend_, activations_.back(), labels, rows, static_cast<int>(classes()), 0.0f, nullptr, stats);
}

std::string Model::summary() const {
    std::string out;
    char line[160];
    const char* rule = "─────────────────────────────────────────────────────────────────────\n";
    std::snprintf(line, sizeof line, "%-32s %-24s %12s\n", "Layer (type)", "Output Shape", "Param #");
    out += rule;
    out += line;
    out += rule;
    size_t view = 0;
    for (size_t i = 0; i < layers_.size(); ++i) {
        size_t count = 0;
        for (size_t k = 0; k < layers_[i]->param_specs().size(); ++k) count += views_[view++].count;
        std::string label = layers_[i]->name() + " (" + layers_[i]->type() + ")";
        const std::string detail = layers_[i]->detail();
        if (!detail.empty()) label += " " + detail;
        if (fused_softmax_ && i + 1 == layers_.size()) label += " softmax*";
        std::snprintf(line, sizeof line, "%-32s %-24s %12zu\n", label.c_str(), shape_to_string(shapes_[i]).c_str(),
                      count);
        out += line;
    }
    out += rule;
    std::snprintf(line, sizeof line, "Total params: %zu (%.2f KB)\nTrainable params: %zu\nNon-trainable params: 0\n",
                  param_count_, param_count_ * 4.0 / 1024.0, param_count_);
    out += line;
    if (fused_softmax_) out += "* softmax fused with the cross-entropy loss\n";
    return out;
}

}  // namespace gputrain::nn
