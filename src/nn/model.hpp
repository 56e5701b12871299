// Model: the layer stack built from the config, its parameters and gradients
// in one flat buffer each (named views for checkpoints and the optimizer), its
// non-trainable state (batch norm's moving statistics) in a third flat buffer
// that the optimizer and the gradient all-reduce never see, the activation
// buffers for up to `max_rows` samples and one workspace shared by the layers
// (they run one at a time), all on one Backend.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend/buffer.hpp"
#include "config/run_config.hpp"
#include "nn/graph.hpp"
#include "nn/layer.hpp"
#include "nn/loss.hpp"

namespace gputrain::nn {

struct ParamView {
    std::string name;   // "dense/kernel"
    Shape shape;
    size_t offset = 0;  // in floats, into the flat buffer
    size_t count = 0;
};

// Called during backward each time a layer has written its parameter
// gradients, with `offset`: grad_data()[offset, param_count()) is final from
// then on (layers run last to first and the flat buffer is in layer order).
using GradientsReady = std::function<void(size_t offset)>;

// What a Model is built for. `inference` (evaluate, predict) allocates no
// gradients and no activation-gradient buffers, and its layers' outputs share
// buffers by liveness (a buffer is free again after the last reader of the
// output in it has run; a chain takes turns in two), so it holds the
// weights, the live activations and the layers' scratch.
enum class ModelUse { training, inference };

class Model {
public:
    // Builds and checks every layer (ConfigError naming the layer on a bad
    // parameter or shape) and initializes the weights from `init_seed`.
    Model(const config::ModelConfig& model, const config::LossConfig& loss, Backend& backend, int64_t max_rows,
          uint64_t init_seed, ModelUse use = ModelUse::training);
    ~Model();
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    const Shape& input_shape() const { return input_shape_; }
    const Shape& output_shape() const { return shapes_.back(); }
    int64_t classes() const { return output_shape().back(); }
    // A sequence model's output is (positions, classes) with a label for each
    // position; 1 for one vector (None, classes) per sample. The loss and the
    // correct count are token-level means: each sample's sums over its
    // positions divided by positions().
    int64_t positions() const { return positions_; }
    int64_t max_rows() const { return max_rows_; }
    const std::vector<ParamView>& params() const { return views_; }
    size_t param_count() const { return param_count_; }
    float* param_data() { return params_; }
    float* grad_data() { return grads_; }  // nullptr under ModelUse::inference
    // Non-trainable tensors ("batch_norm/moving_mean"), offsets into state_data().
    const std::vector<ParamView>& state() const { return state_views_; }
    size_t state_count() const { return state_count_; }
    // The state's first floats: what training changes (batch norm's moving
    // statistics), averaged over replicas; frozen layers' tensors follow.
    size_t averaged_state_count() const { return averaged_state_count_; }
    // Whether layer i is frozen (trainable: false).
    bool frozen(size_t i) const { return frozen_[i] != 0; }
    float* state_data() { return state_; }
    size_t workspace_bytes() const { return workspace_bytes_; }
    const Loss& loss() const { return loss_; }
    Loss& loss() { return loss_; }
    bool fused_softmax() const { return fused_softmax_; }

    // Forward, loss and backward for `rows` samples (device pointers). The
    // parameter gradients are d(sum of losses)/dw * grad_scale. `ready`, when
    // given, is called after every layer's backward (also with rows == 0, so
    // every replica sees the same calls), so that gradient all-reduces can start
    // early. Not for a ModelUse::inference model (throws).
    void forward_backward(const RunContext& ctx, const float* inputs, const int32_t* labels, int rows,
                          float grad_scale, float* stats, const GradientsReady& ready = nullptr);
    // Layer::prepare_step on every layer: call before forward_backward when
    // the step is recorded or replayed as a graph.
    void prepare_step(const RunContext& ctx) {
        for (auto& layer : layers_) layer->prepare_step(ctx);
    }
    // Where each layer's trainable parameters begin in the flat buffer
    // (layers + 1 entries, the last = param_count()): the offsets `ready` reports.
    const std::vector<size_t>& layer_param_offsets() const { return layer_offsets_; }
    // Whether backward computes the gradient of layer i's (first) input: only
    // when a layer with trainable parameters made it or what it came from
    // (layers in front of every trainable layer are not run backward at all).
    bool computes_input_gradient(size_t i) const { return needs_grad_[static_cast<size_t>(graph_.inputs[i][0])]; }
    // Which tensors each layer reads (graph.hpp), and each tensor's shape
    // per sample (0: the model's input, i + 1: layer i's output).
    const LayerGraph& graph() const { return graph_; }
    const Shape& tensor_shape(int tensor) const { return tensor_shapes_[static_cast<size_t>(tensor)]; }
    // Forward and loss only (inference mode).
    void evaluate(const RunContext& ctx, const float* inputs, const int32_t* labels, int rows, float* stats);

    // Forward only (inference mode, no labels): for `gputrain predict`.
    void predict(const RunContext& ctx, const float* inputs, int rows) { forward(ctx, inputs, rows); }

    // The last layer's output of the latest forward pass (rows x classes), logits when fused.
    const float* outputs() const { return activations_.back(); }

    // Floats allocated for `max_rows` samples: the layer outputs plus the
    // activation-gradient buffers (inference: the output buffers shared by
    // liveness; both two for a chain), and the layers' scratch (for memory estimates; workspace_bytes() is the shared
    // workspace's).
    size_t activation_floats() const { return activation_floats_; }
    size_t scratch_floats() const { return scratch_floats_; }
    // Bytes of the layers' own 16-bit GEMM operand copies (Layer::gemm_copy_bytes).
    size_t gemm_copy_bytes() const { return gemm_copy_bytes_; }

    // A Keras-like table: layer (type), output shape, parameters (and, for a
    // graph, the layers each reads: Keras' "Connected to"); then totals.
    // Layers named in `loaded` are marked '+' (model.init_from), frozen ones
    // (trainable: false) "frozen".
    std::string summary(const std::set<std::string>& loaded = {}) const;
    // The graph in Graphviz's DOT language: a box per layer (name, type,
    // output shape, parameters) and an edge per input.
    std::string dot() const;
    // loss.from_logits is true but the last layer ends in softmax: the loss
    // takes probabilities for logits (a softmax twice), as Keras warns.
    bool softmax_under_logits_loss() const { return softmax_under_logits_loss_; }
    // The reverse: a cross-entropy on probabilities (from_logits false) over a
    // last layer that does not end in softmax, so its outputs are no probabilities.
    bool probabilities_not_softmax() const { return probabilities_not_softmax_; }
    // "" or why model.input_shape looks channels-first ([1, 28, 28] before a
    // conv2d: a 1-pixel-high image of 28 channels), with the shape to write.
    std::string channels_first_warning() const;
    // What fit and summary warn about the model: the three above, as lines
    // ("loss.from_logits is true, but the last layer ..."), none when all is well.
    std::vector<std::string> warnings() const;

    // ---- Read-only layer access and an observed training step, for `gputrain bench`.
    size_t layer_count() const { return layers_.size(); }
    const Layer& layer(size_t i) const { return *layers_[i]; }
    const Shape& layer_output_shape(size_t i) const { return shapes_[i]; }
    enum class Phase { forward, loss, backward };
    // Called after each layer's forward, after the loss (layer == layer_count())
    // and after each layer's backward, in the order they run.
    using LayerObserver = std::function<void(size_t layer, Phase phase)>;
    // forward_backward (the same code), calling `after` between the
    // steps so the caller can time each layer.
    void forward_backward_observed(const RunContext& ctx, const float* inputs, const int32_t* labels, int rows,
                                   float grad_scale, float* stats, const LayerObserver& after);

private:
    void forward(const RunContext& ctx, const float* inputs, int rows);
    // The pointers layer `layer` reads, in its inputs' order.
    void gather_inputs(size_t layer, const float* inputs, std::vector<const float*>& xs) const;
    // Inference: the buffer (0, 1, ...) each layer's output takes.
    std::vector<int> plan_inference_buffers() const;
    // Training: fills backward_ and loss_slot_; returns how many gradient buffers it uses.
    int plan_backward();
    // forward_backward with either callback (both optional).
    void run_step(const RunContext& ctx, const float* inputs, const int32_t* labels, int rows, float grad_scale,
                  float* stats, const GradientsReady& ready, const LayerObserver* after);
    void initialize(uint64_t seed);
    // The loss of the latest forward pass (positions() aware); grad may be null.
    void compute_loss(const int32_t* labels, int rows, float grad_scale, float* grad, float* stats);
    // Backend memory the model owns (freed with it, also when its constructor throws).
    float* own_floats(size_t count);
    void* own_bytes(size_t bytes);
    void allocate_workspace();

    Backend& backend_;
    std::vector<Buffer> owned_;          // every block below points into one of these
    Loss loss_;
    ModelUse use_;
    Shape input_shape_;
    std::vector<std::unique_ptr<Layer>> layers_;
    LayerGraph graph_;
    std::vector<Shape> shapes_;          // output shape of each layer
    std::vector<Shape> tensor_shapes_;   // the input's, then each layer's output's
    std::vector<char> needs_grad_;       // per tensor
    // Per layer, its backward pass: whether it runs, the gradient buffer of
    // its output, and for each input the buffer it writes (-1: none) and the
    // buffer that one is added into afterwards (-1: it is the tensor's own).
    struct BackwardPlan {
        bool runs = false;
        int dy = -1;
        std::vector<int> dx, sum_into;
    };
    std::vector<BackwardPlan> backward_;
    int loss_slot_ = -1;                 // the buffer the loss writes its gradient to
    std::vector<ParamView> views_;
    std::vector<ParamSpec> specs_;       // parallel to views_
    std::vector<ParamView> state_views_;
    std::vector<ParamSpec> state_specs_; // parallel to state_views_
    std::vector<size_t> layer_offsets_;  // first trainable float of each layer, then param_count_
    int64_t max_rows_;
    int64_t positions_ = 1;
    float* sequence_stats_ = nullptr;  // a sequence model's loss sums before they are divided by positions_
    size_t param_count_ = 0;
    size_t state_count_ = 0;
    size_t averaged_state_count_ = 0;
    // trainable: false per layer; a frozen batch norm's forward in inference
    // mode; frozen weights' gradients (read by nothing) when backward reaches them.
    std::vector<char> frozen_, inference_mode_;
    float* frozen_grads_ = nullptr;
    size_t frozen_grad_count_ = 0;
    // Each layer's tensors in its param_specs() order: (in the state buffer, view index).
    std::vector<std::vector<std::pair<bool, size_t>>> init_order_;
    size_t activation_floats_ = 0;
    size_t scratch_floats_ = 0;
    bool fused_softmax_ = false;
    bool softmax_under_logits_loss_ = false;
    bool probabilities_not_softmax_ = false;
    float* params_ = nullptr;
    float* grads_ = nullptr;
    float* state_ = nullptr;
    void* workspace_ = nullptr;
    size_t workspace_bytes_ = 0;
    void* gemm_copies_ = nullptr;  // every layer's block, one allocation
    size_t gemm_copy_bytes_ = 0;
    std::vector<float*> activations_;    // per layer output
    std::vector<float*> activation_blocks_;  // what activations_ point into (inference: shared by liveness)
    float* scratch_ = nullptr;
    std::vector<float*> grad_buffers_;   // activation gradients, shared by liveness
};

}  // namespace gputrain::nn
