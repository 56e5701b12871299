#include "nn/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "backend/gemm_input_cast.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "nn/layer_names.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

namespace {

// The most elements of one parameter tensor (64 GiB of fp32): far beyond any
// device's memory, and far from overflowing the counts made from it.
constexpr int64_t kMaxParamElements = int64_t{1} << 34;
// The most values of one activation buffer (4 TiB of fp32): sizes counted from
// it in bytes stay far from overflowing.
constexpr int64_t kMaxBufferElements = int64_t{1} << 40;

}  // namespace

Model::Model(const config::ModelConfig& model, const config::LossConfig& loss, Backend& backend, int64_t max_rows,
             uint64_t init_seed, ModelUse use)
    : backend_(backend), loss_(loss), use_(use), input_shape_(model.input_shape), max_rows_(max_rows) {
    if (model.layers.empty()) throw ConfigError("model.layers: the model has no layers; add at least one");
    for (int64_t d : input_shape_)
        if (d <= 0) throw ConfigError("model.input_shape: every dimension must be positive");
    int64_t elements = 0;
    if (!elements_within(input_shape_, kMaxSampleElements, elements))
        throw ConfigError("model.input_shape: " + shape_to_string(input_shape_, false) + " has more than " +
                          std::to_string(kMaxSampleElements) + " elements per sample; give a smaller shape");

    // Build the layers, naming them like Keras (dense, dense_1, ...).
    LayerNamer namer(model.layers);
    Shape shape = input_shape_;
    for (size_t i = 0; i < model.layers.size(); ++i) {
        const auto& spec = model.layers[i];
        auto layer = builtin_layers().create(spec, static_cast<int>(i));
        layer->set_name(namer.name(spec, static_cast<int>(i)));
        layer->set_index(static_cast<int>(i));
        try {
            shape = layer->build(shape);
        } catch (const ConfigError& e) {
            // A shape the layer cannot take: where the layer is in the config.
            throw ConfigError(LayerArgs(spec, static_cast<int>(i)).place() + e.what());
        }
        // Every later size (activations, GEMM dimensions) is counted from these.
        if (!elements_within(shape, kMaxSampleElements, elements))
            LayerArgs(spec, static_cast<int>(i))
                .fail("", "its output " + shape_to_string(shape) + " has more than " +
                              std::to_string(kMaxSampleElements) + " elements per sample; use smaller sizes");
        for (const auto& p : layer->param_specs())
            if (!elements_within(p.shape, kMaxParamElements, elements))
                LayerArgs(spec, static_cast<int>(i))
                    .fail("", "its " + p.name + " " + shape_to_string(p.shape, false) + " has more than " +
                                  std::to_string(kMaxParamElements) + " elements; use smaller sizes");
        shapes_.push_back(shape);
        layers_.push_back(std::move(layer));
    }

    // The losses read one score per class for each sample.
    if (shapes_.back().size() != 1)
        LayerArgs(model.layers.back(), static_cast<int>(model.layers.size() - 1))
            .fail("", "the model's output " + shape_to_string(shapes_.back()) +
                          " must be one vector per sample, (None, classes), for the loss; add a flatten layer "
                          "before the last dense layer");
    softmax_under_logits_loss_ = loss_.is_cross_entropy() && loss_.from_logits() && layers_.back()->ends_in_softmax();
    if (loss_.is_cross_entropy() && !loss_.from_logits() && layers_.back()->strip_final_softmax()) {
        fused_softmax_ = true;
        loss_.set_from_logits(true);
    }

    // A shard's buffers: max_rows samples of the input and of each layer's
    // output must stay countable, and their rows (all axes but the last: a
    // dense layer's GEMM rows, the pixels of an image batch that convolution,
    // pooling and batch norm index with int) an int.
    for (size_t i = 0; i <= layers_.size(); ++i) {
        const Shape& s = i == 0 ? input_shape_ : shapes_[i - 1];
        const int64_t n = shape_elements(s);
        const std::string what = i == 0 ? "the input " : "layer '" + layers_[i - 1]->name() + "' output ";
        if (max_rows_ > kMaxBufferElements / n)
            throw ConfigError("training.batch_size: " + std::to_string(max_rows_) + " samples per replica of " + what +
                              shape_to_string(s) + " are more than " + std::to_string(kMaxBufferElements) +
                              " values in one buffer; lower training.batch_size");
        if (max_rows_ > INT32_MAX / (n / s.back()))
            throw ConfigError("training.batch_size: " + std::to_string(max_rows_) + " samples per replica of " + what +
                              shape_to_string(s) + " make more than 2147483647 rows of " + std::to_string(s.back()) +
                              " values, more than the kernels index; lower training.batch_size");
    }

    // One flat buffer of parameters, one of gradients, with a named view per
    // parameter; non-trainable tensors go to the state buffer instead.
    struct Slot {
        bool trainable;
        size_t view;
    };
    std::vector<std::vector<Slot>> layer_slots(layers_.size());
    for (size_t i = 0; i < layers_.size(); ++i) {
        layer_offsets_.push_back(param_count_);
        for (const auto& spec : layers_[i]->param_specs()) {
            auto& views = spec.trainable ? views_ : state_views_;
            size_t& count = spec.trainable ? param_count_ : state_count_;
            ParamView v{layers_[i]->name() + "/" + spec.name, spec.shape, count,
                        static_cast<size_t>(shape_elements(spec.shape))};
            count += v.count;
            layer_slots[i].push_back({spec.trainable, views.size()});
            views.push_back(v);
            (spec.trainable ? specs_ : state_specs_).push_back(spec);
        }
    }
    layer_offsets_.push_back(param_count_);
    first_trainable_ = layers_.size();
    for (size_t i = layers_.size(); i-- > 0;)
        if (layer_offsets_[i + 1] > layer_offsets_[i]) first_trainable_ = i;
    params_ = backend_.allocate_floats(param_count_);
    if (use_ == ModelUse::training) grads_ = backend_.allocate_floats(param_count_);
    state_ = backend_.allocate_floats(std::max<size_t>(1, state_count_));
    for (size_t i = 0; i < layers_.size(); ++i) {
        std::vector<float*> p, g;
        for (const Slot& slot : layer_slots[i]) {
            if (slot.trainable) {
                p.push_back(params_ + views_[slot.view].offset);
                g.push_back(grads_ ? grads_ + views_[slot.view].offset : nullptr);
            } else {
                p.push_back(state_ + state_views_[slot.view].offset);
                g.push_back(nullptr);
            }
        }
        layers_[i]->bind(p, g);
    }

    // Activations, per-layer scratch and the two activation-gradient buffers.
    // Each layer's scratch block starts on a 256-byte boundary, as a block of
    // its own would (cuDNN and vector loads read some of them: a conv's
    // pre-activation output), whatever the blocks before it hold.
    const auto scratch_block = [&](const Layer& layer) {
        constexpr int64_t kAlignFloats = 64;
        const int64_t floats = max_rows_ * layer.scratch_per_sample() + layer.scratch_fixed();
        return (floats + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
    };
    int64_t widest = shape_elements(input_shape_), widest_output = 0, scratch = 0;
    for (size_t i = 0; i < layers_.size(); ++i) {
        const int64_t n = shape_elements(shapes_[i]);
        widest = std::max(widest, n);
        widest_output = std::max(widest_output, n);
        if (use_ == ModelUse::training) {
            activation_blocks_.push_back(backend_.allocate_floats(static_cast<size_t>(max_rows_ * n)));
            activation_floats_ += static_cast<size_t>(max_rows_ * n);
        }
        scratch += scratch_block(*layers_[i]);
    }
    if (use_ == ModelUse::inference) {
        // Layer i reads layer i-1's output and writes its own: two buffers, taken in turns.
        for (int b = 0; b < std::min<int>(2, static_cast<int>(layers_.size())); ++b) {
            activation_blocks_.push_back(backend_.allocate_floats(static_cast<size_t>(max_rows_ * widest_output)));
            activation_floats_ += static_cast<size_t>(max_rows_ * widest_output);
        }
        for (size_t i = 0; i < layers_.size(); ++i) activations_.push_back(activation_blocks_[i % 2]);
    } else {
        activations_ = activation_blocks_;
    }
    scratch_floats_ = static_cast<size_t>(scratch);
    scratch_ = backend_.allocate_floats(std::max<size_t>(1, scratch_floats_));
    float* s = scratch_;
    for (auto& layer : layers_) {
        layer->set_scratch(s);
        s += scratch_block(*layer);
    }
    if (use_ == ModelUse::training) {
        grad_a_ = backend_.allocate_floats(static_cast<size_t>(max_rows_ * widest));
        grad_b_ = backend_.allocate_floats(static_cast<size_t>(max_rows_ * widest));
        activation_floats_ += 2 * static_cast<size_t>(max_rows_ * widest);
    }
    allocate_workspace();

    initialize(init_seed);
}

Model::~Model() {
    for (float* a : activation_blocks_) backend_.release(a);
    backend_.release(scratch_);
    if (grad_a_) backend_.release(grad_a_);
    if (grad_b_) backend_.release(grad_b_);
    backend_.release(params_);
    if (grads_) backend_.release(grads_);
    backend_.release(state_);
    if (workspace_) backend_.release(workspace_);
    if (gemm_copies_) backend_.release(gemm_copies_);
}

void Model::allocate_workspace() {
    size_t gemm_scratch = 0;
    for (auto& layer : layers_) {
        workspace_bytes_ = std::max(workspace_bytes_, layer->workspace_bytes(backend_, max_rows_));
        gemm_scratch = std::max(gemm_scratch, layer->gemm_scratch_bytes(backend_, max_rows_));
    }
    // The backend's own (shared by every model on it), before any step runs.
    backend_.reserve_gemm_scratch(gemm_scratch);
    // The layers' 16-bit copies, each block on a 256-byte boundary.
    std::vector<size_t> copy_offsets, copy_sizes;
    for (auto& layer : layers_) {
        copy_offsets.push_back(gemm_copy_bytes_);
        copy_sizes.push_back(layer->gemm_copy_bytes(backend_, max_rows_));
        gemm_copy_bytes_ += round_up_cast_copy(copy_sizes.back());
    }
    if (gemm_copy_bytes_ > 0) {
        gemm_copies_ = backend_.allocate_bytes(gemm_copy_bytes_);
        for (size_t i = 0; i < layers_.size(); ++i)
            if (copy_sizes[i] > 0)
                layers_[i]->set_gemm_copies(static_cast<char*>(gemm_copies_) + copy_offsets[i],
                                            backend_.gemm_copy_bytes());
        // A layer whose input's copy its predecessor can write with its output.
        for (size_t i = 1; i < layers_.size(); ++i)
            if (void* input_copy = layers_[i]->gemm_input_copy())
                layers_[i]->set_gemm_input_copy_made(layers_[i - 1]->set_gemm_output_copy(input_copy));
    }
    if (workspace_bytes_ == 0) return;
    workspace_ = backend_.allocate_bytes(workspace_bytes_);
    for (auto& layer : layers_) layer->set_workspace(workspace_, workspace_bytes_);
}

namespace {

void fill_initial(const ParamSpec& spec, float* out, size_t n, Rng& rng) {
    switch (spec.init) {
        case Init::zeros:
            std::fill(out, out + n, 0.0f);
            break;
        case Init::ones:
            std::fill(out, out + n, 1.0f);
            break;
        case Init::glorot_uniform: {
            double fan_in = static_cast<double>(spec.fan_in), fan_out = static_cast<double>(spec.fan_out);
            if (spec.fan_in <= 0 || spec.fan_out <= 0) {
                fan_out = static_cast<double>(spec.shape.back());
                fan_in = static_cast<double>(shape_elements(spec.shape)) / fan_out;
            }
            const float limit = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
            for (size_t i = 0; i < n; ++i) out[i] = (2.0f * rng.uniform() - 1.0f) * limit;
            break;
        }
    }
}

}  // namespace

void Model::initialize(uint64_t seed) {
    if (!backend_.holds_data()) return;  // sized only: no weights to draw, and no host copy of them
    // Host-side so every backend starts from identical weights for a seed. The
    // state draws after the parameters, so adding it changed no weights.
    Rng rng(seed);
    std::vector<float> host(param_count_);
    for (size_t v = 0; v < views_.size(); ++v)
        fill_initial(specs_[v], host.data() + views_[v].offset, views_[v].count, rng);
    backend_.copy_to_device(params_, host.data(), param_count_ * sizeof(float));
    if (state_count_ == 0) return;
    host.assign(state_count_, 0.0f);
    for (size_t v = 0; v < state_views_.size(); ++v)
        fill_initial(state_specs_[v], host.data() + state_views_[v].offset, state_views_[v].count, rng);
    backend_.copy_to_device(state_, host.data(), state_count_ * sizeof(float));
}

void Model::forward(const RunContext& ctx, const float* inputs, int rows) {
    const float* x = inputs;
    for (size_t i = 0; i < layers_.size(); ++i) {
        layers_[i]->forward(ctx, x, activations_[i], rows);
        x = activations_[i];
    }
}

void Model::forward_backward(const RunContext& ctx, const float* inputs, const int32_t* labels, int rows,
                             float grad_scale, float* stats, const GradientsReady& ready) {
    run_step(ctx, inputs, labels, rows, grad_scale, stats, ready, nullptr);
}

void Model::forward_backward_observed(const RunContext& ctx, const float* inputs, const int32_t* labels, int rows,
                                      float grad_scale, float* stats, const LayerObserver& after) {
    run_step(ctx, inputs, labels, rows, grad_scale, stats, nullptr, &after);
}

void Model::run_step(const RunContext& ctx, const float* inputs, const int32_t* labels, int rows, float grad_scale,
                     float* stats, const GradientsReady& ready, const LayerObserver* after) {
    if (use_ == ModelUse::inference) throw Error("internal: a training step on a model built for inference");
    if (rows == 0) {
        // An empty shard still contributes (zero) gradients to the all-reduce,
        // and its layers still join their own collectives (sync batch norm) in
        // the order a step with rows would make them; `ready` hears of every
        // layer too, so the replica starts the same gradient buckets.
        backend_.fill(grads_, param_count_, 0.0f);
        for (auto& layer : layers_) layer->forward_without_rows(ctx);
        for (size_t i = layers_.size(); i-- > 0;) {
            if (i >= first_trainable_) layers_[i]->backward_without_rows(ctx);
            if (ready) ready(layer_offsets_[i]);
        }
        return;
    }
    const float* x = inputs;
    for (size_t i = 0; i < layers_.size(); ++i) {
        layers_[i]->forward(ctx, x, activations_[i], rows);
        x = activations_[i];
        if (after) (*after)(i, Phase::forward);
    }
    float* dy = grad_a_;
    float* spare = grad_b_;
    loss_.compute(backend_, activations_.back(), labels, rows, static_cast<int>(classes()), grad_scale, dy, stats);
    // Scaling by a power of two is exact: the same as scaling grad_scale.
    if (ctx.loss_scale) backend_.scale_by(dy, static_cast<size_t>(rows) * static_cast<size_t>(classes()), ctx.loss_scale);
    if (after) (*after)(layers_.size(), Phase::loss);
    for (size_t i = layers_.size(); i-- > 0;) {
        const float* xi = i == 0 ? inputs : activations_[i - 1];
        // Nothing before the first layer with parameters needs a gradient (a
        // flatten or dropout in front would only pass it on to the input).
        float* dx = computes_input_gradient(i) ? spare : nullptr;
        if (i >= first_trainable_) layers_[i]->backward(ctx, xi, activations_[i], dy, dx, rows);
        if (ready) ready(layer_offsets_[i]);
        std::swap(dy, spare);
        if (after) (*after)(i, Phase::backward);
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
    for (size_t i = 0; i < layers_.size(); ++i) {
        size_t count = 0;
        for (const auto& spec : layers_[i]->param_specs()) count += static_cast<size_t>(shape_elements(spec.shape));
        std::string label = layers_[i]->name() + " (" + layers_[i]->type() + ")";
        const std::string detail = layers_[i]->detail();
        if (!detail.empty()) label += " " + detail;
        if (fused_softmax_ && i + 1 == layers_.size()) label += layers_[i]->type() == "softmax" ? "*" : " softmax*";
        // A label wider than its column gets a line of its own, the columns stay in line.
        if (label.size() > 32) {
            out += label + "\n";
            label.clear();
        }
        std::snprintf(line, sizeof line, "%-32s %-24s %12zu\n", label.c_str(), shape_to_string(shapes_[i]).c_str(),
                      count);
        out += line;
    }
    out += rule;
    const size_t total = param_count_ + state_count_;
    std::snprintf(line, sizeof line, "Total params: %zu (%.2f KB)\nTrainable params: %zu\nNon-trainable params: %zu\n",
                  total, total * 4.0 / 1024.0, param_count_, state_count_);
    out += line;
    if (fused_softmax_) out += "* softmax fused with the cross-entropy loss\n";
    return out;
}

}  // namespace gputrain::nn
