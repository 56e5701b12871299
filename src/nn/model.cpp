#include "nn/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "backend/gemm_input_cast.hpp"
#include "backend/ops/elementwise.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/suggest.hpp"
#include "nn/batch_norm.hpp"
#include "nn/dense.hpp"
#include "nn/embedding.hpp"
#include "nn/graph.hpp"
#include "nn/layer_args.hpp"
#include "nn/layer_names.hpp"
#include "nn/registry.hpp"
#include "nn/spatial.hpp"

namespace gputrain::nn {

namespace {

// The most elements of one parameter tensor (64 GiB of fp32): far beyond any
// device's memory, and far from overflowing the counts made from it.
constexpr int64_t kMaxParamElements = int64_t{1} << 34;
// The most values of one activation buffer (4 TiB of fp32): sizes counted from
// it in bytes stay far from overflowing.
constexpr int64_t kMaxBufferElements = int64_t{1} << 40;

// A dense layer's `tie_weights: NAME` (layer i, built): the embedding NAME
// listed above it, whose table [units, input width] is its kernel
// transposed, with the same trainable setting; no other dense layer tied to
// it. Returns that embedding's index.
size_t check_tie(const std::vector<std::unique_ptr<Layer>>& layers, const std::vector<std::string>& names,
                 const std::vector<config::LayerSpec>& specs, size_t i, std::vector<int>& tied_by) {
    const config::LayerSpec& spec = specs[i];
    const auto& dense = static_cast<const Dense&>(*layers[i]);
    const std::string& target = dense.tied_to();
    const LayerArgs args(spec, static_cast<int>(i));
    const auto found = std::find(names.begin(), names.end(), target);
    if (found == names.end()) {
        std::vector<std::string> known;
        for (size_t j = 0; j < i; ++j)
            if (layers[j]->type() == "embedding") known.push_back(names[j]);
        args.fail("tie_weights", "unknown layer '" + target + "'" + did_you_mean(target, known) +
                                     "; name an embedding layer listed above it" +
                                     (known.empty() ? std::string(" (the model has none)")
                                                    : " (" + join_names(known) + ")"));
    }
    const size_t e = static_cast<size_t>(found - names.begin());
    if (e == i) args.fail("tie_weights", "names this layer itself; name an embedding layer listed above it");
    const Layer& layer = *layers[e];
    if (layer.type() != "embedding")
        args.fail("tie_weights", "'" + target + "' is a " + layer.type() +
                                     " layer; name an embedding layer, whose table becomes this layer's kernel");
    if (e > i)
        args.fail("tie_weights", "embedding '" + target + "' is listed after this layer; a tied dense layer comes "
                                 "after its embedding (list the embedding first)");
    const auto& embedding = static_cast<const Embedding&>(layer);
    const std::string table = "its table [" + std::to_string(embedding.input_dim()) + ", " +
                              std::to_string(embedding.output_dim()) + "]";
    if (dense.units() != embedding.input_dim())
        args.fail("units", std::to_string(dense.units()) + " is not the input_dim " +
                               std::to_string(embedding.input_dim()) + " of embedding '" + target +
                               "' (tie_weights: the kernel is " + table + " transposed); set units: " +
                               std::to_string(embedding.input_dim()));
    if (dense.in_features() != embedding.output_dim())
        args.fail("tie_weights", "the input is " + std::to_string(dense.in_features()) +
                                     " wide, and the output_dim of embedding '" + target + "' is " +
                                     std::to_string(embedding.output_dim()) + " (the kernel is " + table +
                                     " transposed); give this layer inputs " +
                                     std::to_string(embedding.output_dim()) + " wide");
    // Said at the frozen one's trainable (the key that was set).
    if (dense.frozen() && !layer.frozen())
        args.fail("trainable", "this layer is frozen (trainable: false) and embedding '" + target +
                                   "', whose table is its kernel (tie_weights), is not; the tied table is one weight: "
                                   "set trainable the same on both");
    if (layer.frozen() && !dense.frozen())
        LayerArgs(specs[e], static_cast<int>(e))
            .fail("trainable", "this layer is frozen (trainable: false) and dense '" + names[i] +
                                   "', tied to it (tie_weights), is not; the tied table is one weight: set trainable "
                                   "the same on both");
    if (!dense.use_bias() && dense.lr_multiplier() != 1.0)
        args.fail("lr_multiplier", "this layer has no parameters of its own: its kernel is the table of embedding '" +
                                       target + "' (tie_weights) and it has no bias; set lr_multiplier on '" + target +
                                       "'");
    if (tied_by[e] >= 0)
        args.fail("tie_weights", "embedding '" + target + "' is tied to '" + names[static_cast<size_t>(tied_by[e])] +
                                     "' already; one dense layer ties to an embedding");
    tied_by[e] = static_cast<int>(i);
    return e;
}

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

    // Create the layers, naming them like Keras (dense, dense_1, ...), then
    // link them into the graph and build each from its inputs' shapes.
    LayerNamer namer(model.layers);
    std::vector<std::string> names;
    for (size_t i = 0; i < model.layers.size(); ++i) {
        const auto& spec = model.layers[i];
        auto layer = builtin_layers().create(spec, static_cast<int>(i));
        layer->set_name(namer.name(spec, static_cast<int>(i)));
        layer->set_index(static_cast<int>(i));
        names.push_back(layer->name());
        layers_.push_back(std::move(layer));
    }
    graph_ = link_layers(model.layers, names);
    tensor_shapes_.push_back(input_shape_);
    // Tied dense layers (tie_weights): layer -> its embedding's index (-1: none), and back.
    std::vector<int> tied_to(model.layers.size(), -1), tied_by(model.layers.size(), -1);
    for (size_t i = 0; i < model.layers.size(); ++i) {
        const auto& spec = model.layers[i];
        Layer& layer = *layers_[i];
        std::vector<Shape> in_shapes;
        std::vector<std::string> in_names;
        for (int t : graph_.inputs[i]) {
            in_shapes.push_back(tensor_shapes_[static_cast<size_t>(t)]);
            in_names.push_back(graph_.tensor_name(t, names));
        }
        layer.set_input_names(in_names);
        Shape shape;
        try {
            shape = layer.build(in_shapes);
        } catch (const ConfigError& e) {
            // A shape the layer cannot take: where the layer is in the config,
            // and the likely cause when the model's input is shaped channels-first.
            throw ConfigError(LayerArgs(spec, static_cast<int>(i)).place() + e.what() +
                              channels_first_hint(input_shape_));
        }
        // Every later size (activations, GEMM dimensions) is counted from these.
        if (!elements_within(shape, kMaxSampleElements, elements))
            LayerArgs(spec, static_cast<int>(i))
                .fail("", "its output " + shape_to_string(shape) + " has more than " +
                              std::to_string(kMaxSampleElements) + " elements per sample; use smaller sizes");
        for (const auto& p : layer.param_specs())
            if (!elements_within(p.shape, kMaxParamElements, elements))
                LayerArgs(spec, static_cast<int>(i))
                    .fail("", "its " + p.name + " " + shape_to_string(p.shape, false) + " has more than " +
                                  std::to_string(kMaxParamElements) + " elements; use smaller sizes");
        const auto* dense = dynamic_cast<const Dense*>(&layer);
        if (dense && !dense->tied_to().empty())
            tied_to[i] = static_cast<int>(check_tie(layers_, names, model.layers, i, tied_by));
        if (layer.frozen() && layer.param_specs().empty() && tied_to[i] < 0)
            LayerArgs(spec, static_cast<int>(i))
                .fail("trainable", "a " + layer.type() + " layer has no weights to freeze; remove trainable: false");
        shapes_.push_back(shape);
        tensor_shapes_.push_back(shape);
    }

    // The losses read one score per class for each sample, or with a
    // crossentropy one per class for each position of a sequence.
    if (shapes_.back().size() == 2 && loss_.is_cross_entropy()) positions_ = shapes_.back()[0];
    else if (shapes_.back().size() != 1)
        LayerArgs(model.layers.back(), static_cast<int>(model.layers.size() - 1))
            .fail("", "the model's output " + shape_to_string(shapes_.back()) +
                          " must be one vector per sample, (None, classes), for the loss (or (None, positions, "
                          "classes) with a crossentropy loss); add a flatten layer before the last dense layer");
    softmax_under_logits_loss_ = loss_.is_cross_entropy() && loss_.from_logits() && layers_.back()->ends_in_softmax();
    probabilities_not_softmax_ =
        loss_.is_cross_entropy() && !loss_.from_logits() && !layers_.back()->ends_in_softmax();
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
    // parameter; non-trainable tensors go to the state buffer instead. A
    // frozen layer's (trainable: false) weights join the state too, after
    // every other layer's: no gradient in the flat buffer, no optimizer slot,
    // no all-reduce, the same names in checkpoints. Where such a layer still
    // runs backward (a trainable layer feeds it), its weight gradients land
    // in a buffer nothing reads.
    struct Slot {
        bool trainable;
        size_t view;
        size_t dead_grad = SIZE_MAX;  // a frozen weight's offset in frozen_grads_
    };
    std::vector<std::vector<Slot>> layer_slots(layers_.size());
    init_order_.assign(layers_.size(), {});
    for (size_t i = 0; i < layers_.size(); ++i) frozen_.push_back(layers_[i]->frozen() ? 1 : 0);
    for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) averaged_state_count_ = state_count_;
        for (size_t i = 0; i < layers_.size(); ++i) {
            if (pass == 0) layer_offsets_.push_back(param_count_);
            if (frozen_[i] != pass) continue;
            for (const auto& spec : layers_[i]->param_specs()) {
                const bool trainable = spec.trainable && !frozen_[i];
                auto& views = trainable ? views_ : state_views_;
                size_t& count = trainable ? param_count_ : state_count_;
                ParamView v{layers_[i]->name() + "/" + spec.name, spec.shape, count,
                            static_cast<size_t>(shape_elements(spec.shape))};
                count += v.count;
                Slot slot{trainable, views.size()};
                if (frozen_[i] && spec.trainable) {
                    slot.dead_grad = frozen_grad_count_;
                    frozen_grad_count_ += v.count;
                }
                layer_slots[i].push_back(slot);
                init_order_[i].push_back({!trainable, views.size()});
                views.push_back(v);
                (trainable ? specs_ : state_specs_).push_back(spec);
            }
        }
    }
    layer_offsets_.push_back(param_count_);
    // A tensor needs a gradient when a layer with trainable parameters made it
    // or made what it was computed from; a layer runs backward when its output
    // needs one (nothing in front of the first trainable layer runs backward).
    needs_grad_.assign(tensor_shapes_.size(), 0);
    for (size_t i = 0; i < layers_.size(); ++i) {
        // A tied dense layer has a trainable weight (its embedding's table)
        // where its embedding is trainable (check_tie: both or neither).
        bool needs = layer_offsets_[i + 1] > layer_offsets_[i] || (tied_to[i] >= 0 && !frozen_[i]);
        for (int t : graph_.inputs[i]) needs = needs || needs_grad_[static_cast<size_t>(t)];
        needs_grad_[i + 1] = needs;
    }
    // Keras runs a frozen batch norm in inference mode (its moving statistics,
    // never updated); gputrain has no backward pass through that mode yet.
    for (size_t i = 0; i < layers_.size(); ++i) {
        inference_mode_.push_back(frozen_[i] && layers_[i]->frozen_runs_inference() ? 1 : 0);
        bool runs_backward = false;
        for (int t : graph_.inputs[i]) runs_backward = runs_backward || needs_grad_[static_cast<size_t>(t)];
        if (inference_mode_[i] && runs_backward && use_ == ModelUse::training)
            LayerArgs(model.layers[i], static_cast<int>(i))
                .fail("trainable", "a frozen " + layers_[i]->type() + " runs in inference mode (its moving "
                                   "statistics, as Keras does), and a trainable layer before it would need its "
                                   "backward pass in that mode, which gputrain does not have yet; freeze the layers "
                                   "before it too, or leave it trainable");
    }
    params_ = own_floats(param_count_);
    if (use_ == ModelUse::training) grads_ = own_floats(param_count_);
    if (use_ == ModelUse::training && frozen_grad_count_ > 0) frozen_grads_ = own_floats(frozen_grad_count_);
    state_ = own_floats(std::max<size_t>(1, state_count_));
    for (size_t i = 0; i < layers_.size(); ++i) {
        std::vector<float*> p, g;
        for (const Slot& slot : layer_slots[i]) {
            if (slot.trainable) {
                p.push_back(params_ + views_[slot.view].offset);
                g.push_back(grads_ ? grads_ + views_[slot.view].offset : nullptr);
            } else {
                p.push_back(state_ + state_views_[slot.view].offset);
                g.push_back(slot.dead_grad != SIZE_MAX && frozen_grads_ ? frozen_grads_ + slot.dead_grad : nullptr);
            }
        }
        layers_[i]->bind(p, g);
    }
    // Tied kernels: the embedding's table and gradient (in whichever buffer
    // holds them). The dense layer runs backward first and writes its part of
    // the gradient; the embedding adds its own.
    for (size_t i = 0; i < layers_.size(); ++i)
        if (tied_to[i] >= 0) {
            auto& embedding = static_cast<Embedding&>(*layers_[static_cast<size_t>(tied_to[i])]);
            static_cast<Dense&>(*layers_[i]).tie(embedding.table(), embedding.table_grad());
            embedding.set_adds_to_grad(true);
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
            activation_blocks_.push_back(own_floats(static_cast<size_t>(max_rows_ * n)));
            activation_floats_ += static_cast<size_t>(max_rows_ * n);
        }
        scratch += scratch_block(*layers_[i]);
    }
    if (use_ == ModelUse::inference) {
        // Outputs share buffers of the widest output by liveness: a layer's
        // output takes a free buffer, and its inputs' buffers come free after
        // their last reader has run (a chain takes turns in two).
        const std::vector<int> slots = plan_inference_buffers();
        const int count = slots.empty() ? 0 : *std::max_element(slots.begin(), slots.end()) + 1;
        for (int b = 0; b < count; ++b) {
            activation_blocks_.push_back(own_floats(static_cast<size_t>(max_rows_ * widest_output)));
            activation_floats_ += static_cast<size_t>(max_rows_ * widest_output);
        }
        for (size_t i = 0; i < layers_.size(); ++i) activations_.push_back(activation_blocks_[static_cast<size_t>(slots[i])]);
    } else {
        activations_ = activation_blocks_;
    }
    scratch_floats_ = static_cast<size_t>(scratch);
    scratch_ = own_floats(std::max<size_t>(1, scratch_floats_));
    if (positions_ > 1) sequence_stats_ = own_floats(2);
    float* s = scratch_;
    for (auto& layer : layers_) {
        layer->set_scratch(s);
        s += scratch_block(*layer);
    }
    if (use_ == ModelUse::training) {
        // Activation gradients in buffers of the widest tensor, reused by
        // liveness over the backward pass (a chain takes turns in two).
        const int count = plan_backward();
        for (int b = 0; b < count; ++b) {
            grad_buffers_.push_back(own_floats(static_cast<size_t>(max_rows_ * widest)));
            activation_floats_ += static_cast<size_t>(max_rows_ * widest);
        }
    }
    allocate_workspace();

    initialize(init_seed);
}

Model::~Model() = default;

float* Model::own_floats(size_t count) { return static_cast<float*>(own_bytes(count * sizeof(float))); }

void* Model::own_bytes(size_t bytes) {
    owned_.emplace_back(backend_, bytes);
    return owned_.back().get();
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
        gemm_copies_ = own_bytes(gemm_copy_bytes_);
        for (size_t i = 0; i < layers_.size(); ++i)
            if (copy_sizes[i] > 0)
                layers_[i]->set_gemm_copies(static_cast<char*>(gemm_copies_) + copy_offsets[i],
                                            backend_.gemm_copy_bytes());
        // A layer of one input whose copy the layer that makes that input can
        // write with its output (one such reader per layer).
        std::vector<char> wired(layers_.size(), 0);
        for (size_t i = 0; i < layers_.size(); ++i) {
            const auto& in = graph_.inputs[i];
            if (in.size() != 1 || in[0] == 0) continue;
            const size_t maker = static_cast<size_t>(in[0] - 1);
            if (wired[maker]) continue;
            if (void* input_copy = layers_[i]->gemm_input_copy()) {
                const bool made = layers_[maker]->set_gemm_output_copy(input_copy);
                layers_[i]->set_gemm_input_copy_made(made);
                wired[maker] = made;
            }
        }
    }
    if (workspace_bytes_ == 0) return;
    workspace_ = own_bytes(workspace_bytes_);
    for (auto& layer : layers_) layer->set_workspace(workspace_, workspace_bytes_);
}

std::vector<int> Model::plan_inference_buffers() const {
    std::vector<int> last_reader(tensor_shapes_.size(), -1), slot_of(tensor_shapes_.size(), -1), slots;
    for (size_t i = 0; i < layers_.size(); ++i)
        for (int t : graph_.inputs[i]) last_reader[static_cast<size_t>(t)] = static_cast<int>(i);
    std::vector<int> free;
    int count = 0;
    for (size_t i = 0; i < layers_.size(); ++i) {
        int slot;
        if (free.empty()) {
            slot = count++;
        } else {
            slot = free.back();
            free.pop_back();
        }
        slot_of[i + 1] = slot;
        slots.push_back(slot);
        for (int t : graph_.inputs[i])  // the model's input is not ours to reuse
            if (t > 0 && last_reader[static_cast<size_t>(t)] == static_cast<int>(i)) {
                free.push_back(slot_of[static_cast<size_t>(t)]);
                last_reader[static_cast<size_t>(t)] = -1;  // an input read twice is freed once
            }
    }
    return slots;
}

int Model::plan_backward() {
    std::vector<int> slot_of(tensor_shapes_.size(), -1), free;
    int count = 0;
    const auto take = [&] {
        if (free.empty()) return count++;
        const int slot = free.back();
        free.pop_back();
        return slot;
    };
    backward_.assign(layers_.size(), {});
    loss_slot_ = take();
    slot_of.back() = loss_slot_;
    for (size_t i = layers_.size(); i-- > 0;) {
        BackwardPlan& plan = backward_[i];
        plan.runs = needs_grad_[i + 1];
        if (!plan.runs) continue;
        plan.dy = slot_of[i + 1];
        std::vector<int> temporaries;
        for (int t : graph_.inputs[i]) {
            int dx = -1, sum_into = -1;
            if (needs_grad_[static_cast<size_t>(t)]) {
                if (slot_of[static_cast<size_t>(t)] < 0) {
                    dx = slot_of[static_cast<size_t>(t)] = take();  // the first reader (last to run) writes it
                } else {
                    dx = take();  // later readers add theirs to it
                    sum_into = slot_of[static_cast<size_t>(t)];
                    temporaries.push_back(dx);
                }
            }
            plan.dx.push_back(dx);
            plan.sum_into.push_back(sum_into);
        }
        free.push_back(plan.dy);
        free.insert(free.end(), temporaries.begin(), temporaries.end());
    }
    return count;
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
        case Init::uniform:
            for (size_t i = 0; i < n; ++i) out[i] = (2.0f * rng.uniform() - 1.0f) * 0.05f;
            break;
    }
}

}  // namespace

void Model::initialize(uint64_t seed) {
    if (!backend_.holds_data()) return;  // sized only: no weights to draw, and no host copy of them
    // Host-side so every backend starts from identical weights for a seed. The
    // state draws after the parameters, so adding it changed no weights.
    // Drawn layer by layer in the order of each layer's tensors, wherever they
    // live: state tensors (zeros, ones) draw nothing, so a frozen layer's
    // weights (in the state buffer) get what they would get trainable.
    Rng rng(seed);
    std::vector<float> host(param_count_), host_state(state_count_);
    for (const auto& layer_order : init_order_)
        for (const auto& [state, v] : layer_order) {
            if (state)
                fill_initial(state_specs_[v], host_state.data() + state_views_[v].offset, state_views_[v].count, rng);
            else
                fill_initial(specs_[v], host.data() + views_[v].offset, views_[v].count, rng);
        }
    backend_.copy_to_device(params_, host.data(), param_count_ * sizeof(float));
    if (state_count_ > 0) backend_.copy_to_device(state_, host_state.data(), state_count_ * sizeof(float));
}

void Model::gather_inputs(size_t layer, const float* inputs, std::vector<const float*>& xs) const {
    xs.clear();
    for (int t : graph_.inputs[layer]) xs.push_back(t == 0 ? inputs : activations_[static_cast<size_t>(t - 1)]);
}

void Model::forward(const RunContext& ctx, const float* inputs, int rows) {
    std::vector<const float*> xs;
    for (size_t i = 0; i < layers_.size(); ++i) {
        gather_inputs(i, inputs, xs);
        layers_[i]->forward(ctx, xs, activations_[i], rows);
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
        RunContext inference_ctx = ctx;
        inference_ctx.training = false;
        for (size_t i = 0; i < layers_.size(); ++i)
            layers_[i]->forward_without_rows(inference_mode_[i] ? inference_ctx : ctx);
        for (size_t i = layers_.size(); i-- > 0;) {
            if (backward_[i].runs) layers_[i]->backward_without_rows(ctx);
            if (ready) ready(layer_offsets_[i]);
        }
        return;
    }
    std::vector<const float*> xs;
    RunContext inference_ctx = ctx;  // a frozen batch norm's (inference_mode_)
    inference_ctx.training = false;
    for (size_t i = 0; i < layers_.size(); ++i) {
        gather_inputs(i, inputs, xs);
        layers_[i]->forward(inference_mode_[i] ? inference_ctx : ctx, xs, activations_[i], rows);
        if (after) (*after)(i, Phase::forward);
    }
    float* loss_grad = grad_buffers_[static_cast<size_t>(loss_slot_)];
    compute_loss(labels, rows, grad_scale, loss_grad, stats);
    // Scaling by a power of two is exact: the same as scaling grad_scale.
    if (ctx.loss_scale)
        backend_.scale_by(loss_grad, static_cast<size_t>(rows) * static_cast<size_t>(positions_ * classes()),
                          ctx.loss_scale);
    if (after) (*after)(layers_.size(), Phase::loss);
    std::vector<float*> dxs;
    for (size_t i = layers_.size(); i-- > 0;) {
        const BackwardPlan& plan = backward_[i];
        if (plan.runs) {
            gather_inputs(i, inputs, xs);
            dxs.clear();
            for (int slot : plan.dx) dxs.push_back(slot < 0 ? nullptr : grad_buffers_[static_cast<size_t>(slot)]);
            layers_[i]->backward(ctx, xs, activations_[i], grad_buffers_[static_cast<size_t>(plan.dy)], dxs, rows);
            // A tensor read by several layers: the gradients of its readers add up.
            for (size_t j = 0; j < plan.sum_into.size(); ++j)
                if (plan.sum_into[j] >= 0) {
                    const int t = graph_.inputs[i][j];
                    run_op(backend_, ops::Accumulate{grad_buffers_[static_cast<size_t>(plan.sum_into[j])], dxs[j],
                                                     static_cast<size_t>(rows) * static_cast<size_t>(shape_elements(
                                                                                     tensor_shapes_[static_cast<size_t>(t)]))});
                }
        }
        if (ready) ready(layer_offsets_[i]);
        if (after) (*after)(i, Phase::backward);
    }
}

void Model::evaluate(const RunContext& ctx, const float* inputs, const int32_t* labels, int rows, float* stats) {
    if (rows == 0) return;
    forward(ctx, inputs, rows);
    compute_loss(labels, rows, 0.0f, nullptr, stats);
}

void Model::compute_loss(const int32_t* labels, int rows, float grad_scale, float* grad, float* stats) {
    const int classes = static_cast<int>(this->classes());
    if (positions_ == 1) {
        loss_.compute(backend_, activations_.back(), labels, rows, classes, grad_scale, grad, stats);
        return;
    }
    // Every position is a row of the loss; a sample's loss is the mean over its positions.
    const float per_position = 1.0f / static_cast<float>(positions_);
    backend_.fill(sequence_stats_, 2, 0.0f);
    loss_.compute(backend_, activations_.back(), labels, rows * static_cast<int>(positions_), classes,
                  grad_scale * per_position, grad, sequence_stats_);
    backend_.scale(sequence_stats_, 2, per_position);
    run_op(backend_, ops::Accumulate{stats, sequence_stats_, 2});
}

std::string Model::summary(const std::set<std::string>& loaded) const {
    // A graph gets Keras' functional column: the tensors each layer reads;
    // its scoped names (stage2/block1/conv2d) get a wider first column.
    const bool graph = !graph_.is_chain();
    std::vector<std::string> names, labels;
    size_t width = 32;
    for (size_t i = 0; i < layers_.size(); ++i) {
        names.push_back(layers_[i]->name());
        std::string label = layers_[i]->name() + " (" + layers_[i]->type() + ")";
        const std::string detail = layers_[i]->detail();
        if (!detail.empty()) label += " " + detail;
        if (fused_softmax_ && i + 1 == layers_.size()) label += layers_[i]->type() == "softmax" ? "*" : " softmax*";
        if (frozen_[i]) label += " frozen";
        if (loaded.count(layers_[i]->name())) label += " +";
        if (graph) width = std::max(width, std::min<size_t>(label.size(), 56));
        labels.push_back(label);
    }
    const auto pad = [](std::string text, size_t n) {
        if (text.size() < n) text.append(n - text.size(), ' ');
        return text;
    };
    std::string rule;
    for (size_t i = 0, n = width + 24 + 1 + 12 + (graph ? 30 : 0); i < n; ++i) rule += "─";
    rule += "\n";
    char line[160];
    std::string out = rule;
    std::snprintf(line, sizeof line, " %-24s %12s%s\n", "Output Shape", "Param #", graph ? "   Connected to" : "");
    out += pad("Layer (type)", width) + line + rule;
    for (size_t i = 0; i < layers_.size(); ++i) {
        size_t count = 0;
        for (const auto& spec : layers_[i]->param_specs()) count += static_cast<size_t>(shape_elements(spec.shape));
        std::string label = labels[i];
        // A label wider than its column gets a line of its own, the columns stay in line.
        if (label.size() > width) {
            out += label + "\n";
            label.clear();
        }
        std::snprintf(line, sizeof line, " %-24s %12zu", shape_to_string(shapes_[i]).c_str(), count);
        out += pad(label, width) + line;
        if (graph) {
            std::string from;
            for (int t : graph_.inputs[i]) from += (from.empty() ? "" : ", ") + graph_.tensor_name(t, names);
            out += "   " + from;
        }
        out += "\n";
    }
    out += rule;
    const size_t total = param_count_ + state_count_;
    std::snprintf(line, sizeof line, "Total params: %zu (%.2f KB)\nTrainable params: %zu\nNon-trainable params: %zu\n",
                  total, total * 4.0 / 1024.0, param_count_, state_count_);
    out += line;
    if (fused_softmax_) out += "* softmax fused with the cross-entropy loss\n";
    return out;
}

namespace {

// A DOT string's text: quotes and backslashes escaped.
std::string dot_text(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

}  // namespace

std::string Model::dot() const {
    std::string out = "digraph model {\n  rankdir=TB;\n  node [shape=box, style=rounded, fontname=\"Helvetica\", "
                      "fontsize=10];\n";
    out += "  n0 [label=\"input\\n" + dot_text(shape_to_string(input_shape_)) + "\"];\n";
    for (size_t i = 0; i < layers_.size(); ++i) {
        size_t count = 0;
        for (const auto& spec : layers_[i]->param_specs()) count += static_cast<size_t>(shape_elements(spec.shape));
        std::string label = layers_[i]->name() + " (" + layers_[i]->type() + ")";
        const std::string detail = layers_[i]->detail();
        if (!detail.empty()) label += " " + detail;
        if (fused_softmax_ && i + 1 == layers_.size() && layers_[i]->type() != "softmax") label += " softmax";
        label = dot_text(label) + "\\n" + dot_text(shape_to_string(shapes_[i]));
        if (count > 0) label += "\\n" + std::to_string(count) + " params";
        out += "  n" + std::to_string(i + 1) + " [label=\"" + label + "\"];\n";
    }
    for (size_t i = 0; i < layers_.size(); ++i)
        for (int t : graph_.inputs[i]) out += "  n" + std::to_string(t) + " -> n" + std::to_string(i + 1) + ";\n";
    return out + "}\n";
}

std::string Model::channels_first_warning() const {
    const Shape& in = input_shape_;
    if (in.size() != 3 || !(in[0] == 1 || in[0] == 3 || in[0] == 4) || in[2] < 8 || in[1] < 8) return "";
    bool image_layer = false;  // a layer reading the input as an image
    for (size_t i = 0; i < layers_.size(); ++i)
        for (int t : graph_.inputs[i])
            if (t == 0) {
                const std::string type = layers_[i]->type();
                image_layer = image_layer || type == "conv2d" || type == "max_pool2d" || type == "avg_pool2d";
            }
    if (!image_layer) return "";
    const std::string given =
        "[" + std::to_string(in[0]) + ", " + std::to_string(in[1]) + ", " + std::to_string(in[2]) + "]";
    return "model.input_shape " + given + " reads as images " + std::to_string(in[0]) + " pixel" +
           (in[0] == 1 ? "" : "s") + " high and " + std::to_string(in[1]) + " wide with " + std::to_string(in[2]) +
           " channels" + channels_first_hint(in);
}

std::vector<std::string> Model::warnings() const {
    std::vector<std::string> out;
    const std::string last = layers_.back()->name();
    if (softmax_under_logits_loss_)
        out.push_back("loss.from_logits is true, but the last layer '" + last +
                      "' ends in softmax: the loss will take its probabilities for logits; set loss.from_logits: "
                      "false, or that layer's activation to linear");
    if (probabilities_not_softmax_)
        out.push_back("loss.from_logits is false, but the last layer '" + last +
                      "' does not end in softmax: the loss will take its outputs for probabilities (clipped to "
                      "[1e-7, 1 - 1e-7]) and learn little; set that layer's activation: softmax, or "
                      "loss.from_logits: true");
    if (std::string w = channels_first_warning(); !w.empty()) out.push_back(std::move(w));
    // PyTorch's BatchNorm momentum (0.1) is the weight of the new batch;
    // Keras' and gputrain's is the old statistics' (0.99): 0.1 here forgets fast.
    for (const auto& layer : layers_)
        if (const auto* bn = dynamic_cast<const BatchNorm*>(layer.get()); bn && bn->momentum() < 0.5) {
            char value[32];
            std::snprintf(value, sizeof value, "%g", bn->momentum());
            char keras[32];
            std::snprintf(keras, sizeof keras, "%g", 1.0 - bn->momentum());
            out.push_back("layer '" + layer->name() + "' (batch_norm): momentum " + value +
                          " keeps that much of the moving statistics at each step (Keras' convention, as "
                          "gputrain's); PyTorch's momentum " + value + " is momentum " + keras + " here");
        }
    return out;
}

}  // namespace gputrain::nn
