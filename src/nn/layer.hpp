// Layer: the contract every layer kind follows (Caffe's set-up / forward /
// backward over spans of inputs). A layer learns its input shapes once
// (`build`), declares its parameters, then is run on batches of `rows`
// samples living in backend memory. Most layers read one input: they derive
// from UnaryLayer and implement the one-input forms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/rng.hpp"
#include "core/shape.hpp"

namespace gputrain::nn {

// uniform: Keras' RandomUniform(-0.05, 0.05), its Embedding's default.
enum class Init { zeros, ones, glorot_uniform, uniform };

struct ParamSpec {
    std::string name;   // within the layer: "kernel", "bias"
    Shape shape;
    Init init;
    // Non-trainable tensors (batch norm's moving statistics) live in the
    // model's separate state buffer: no gradient, never seen by the optimizer
    // or the gradient all-reduce, but checkpointed like parameters.
    bool trainable = true;
    // Glorot fans when the shape alone does not give them (a conv kernel
    // [out_c, kh, kw, in_c]: fan_in = kh*kw*in_c, fan_out = kh*kw*out_c as in
    // Keras). 0 = from the shape: fan_out = last axis, fan_in = the rest.
    int64_t fan_in = 0;
    int64_t fan_out = 0;
};

// The replicas' group as a layer sees it (nn/ does not know dist/): an
// in-place sum over every replica of backend memory. Every replica must make
// the same calls in the same order, including replicas with no rows this step.
struct CrossReplica {
    virtual ~CrossReplica() = default;
    virtual void allreduce_sum(float* device_data, size_t count) = 0;
};

// What a forward/backward call may need to know about where it runs.
struct RunContext {
    Backend& backend;
    bool training = false;
    uint64_t seed = 0;            // training.seed
    int64_t epoch = 0;
    int64_t step = 0;             // step within the epoch
    int64_t row_offset = 0;       // index of this shard's first row within the global batch
    CrossReplica* cross_replica = nullptr;  // null on a single replica
    bool fused = true;            // training.fused_kernels: bias + activation in one pass (activation_step.hpp)
    // fp16's loss scale in backend memory (train/loss_scaler.hpp): the loss
    // gradient is multiplied by it before backward; null = no scaling.
    const float* loss_scale = nullptr;
    // Sampling (gputrain generate): a sequence model built on ONE position
    // per sample runs that position at absolute index `position` of the
    // sequence; positional embeddings read row `position` of their table and
    // attention layers append its key and value to their cache and attend over
    // positions [0, position]. -1: a whole block from position 0 (training,
    // evaluate, predict).
    int64_t position = -1;
};

class Layer {
public:
    virtual ~Layer() = default;

    const std::string& name() const { return name_; }
    // `trainable: false` (Keras' attribute): the Model keeps the layer's
    // weights with the state (no gradient all-reduced, no optimizer update).
    bool frozen() const { return frozen_; }
    void set_frozen(bool frozen) { frozen_ = frozen; }
    // `lr_multiplier`: the factor on the learning rate for this layer's weights.
    double lr_multiplier() const { return lr_multiplier_; }
    void set_lr_multiplier(double m) { lr_multiplier_ = m; }
    // Whether a frozen layer of this kind runs forward in inference mode
    // during training (batch norm, as Keras does).
    virtual bool frozen_runs_inference() const { return false; }
    void set_name(const std::string& name) { name_ = name; }
    virtual std::string type() const = 0;
    // One-line description of non-default settings for the summary, e.g. "relu".
    virtual std::string detail() const { return ""; }

    // Checks the input shapes (per sample, one per input, in the order of
    // the layer's `inputs:`) and returns the output shape. Throws ConfigError
    // naming the layer (and its inputs, input_names()) on an impossible shape.
    virtual Shape build(std::span<const Shape> input_shapes) = 0;
    Shape build(const Shape& input_shape) { return build(std::span<const Shape>(&input_shape, 1)); }
    // The names of the tensors the layer reads ("input" = the model's input),
    // set by the model before build, for error messages.
    void set_input_names(std::vector<std::string> names) { input_names_ = std::move(names); }
    const std::vector<std::string>& input_names() const { return input_names_; }
    virtual std::vector<ParamSpec> param_specs() const { return {}; }
    // Views into the model's flat buffers, in param_specs() order; a
    // non-trainable tensor points into the state buffer and its grad is null.
    virtual void bind(const std::vector<float*>& params, const std::vector<float*>& grads) {
        (void)params;
        (void)grads;
    }
    // Floats of per-sample scratch the layer keeps between forward and backward.
    virtual int64_t scratch_per_sample() const { return 0; }
    // Floats of scratch that do not grow with the batch (per-channel statistics).
    // The layer's scratch block is max_rows * scratch_per_sample() + this.
    virtual int64_t scratch_fixed() const { return 0; }
    virtual void set_scratch(float* scratch) { (void)scratch; }
    // Bytes of temporary memory one forward or backward call needs for up to
    // `max_rows` samples. Layers run one at a time, so the model allocates one
    // workspace of the largest need and hands it to every layer; nothing in it
    // survives from one call to the next.
    virtual size_t workspace_bytes(Backend& backend, int64_t max_rows) {
        (void)backend;
        (void)max_rows;
        return 0;
    }
    virtual void set_workspace(void* workspace, size_t bytes) {
        (void)workspace;
        (void)bytes;
    }
    // Bytes of scratch the backend's gemm() needs for the largest of this
    // layer's GEMMs at up to `max_rows` samples (Backend::gemm_scratch_bytes);
    // the model reserves the largest need of all its layers before training.
    virtual size_t gemm_scratch_bytes(const Backend& backend, int64_t max_rows) const {
        (void)backend;
        (void)max_rows;
        return 0;
    }

    // Bytes of 16-bit GEMM operand copies (Backend::gemm_copy) the layer
    // keeps from its forward to its backward pass at up to `max_rows` samples;
    // 0 where the backend makes no copies. The model allocates each layer's
    // block (256-byte aligned) before training and hands it over with the
    // backend's bytes per element.
    virtual size_t gemm_copy_bytes(const Backend& backend, int64_t max_rows) const {
        (void)backend;
        (void)max_rows;
        return 0;
    }
    virtual void set_gemm_copies(void* copies, size_t element_bytes) {
        (void)copies;
        (void)element_bytes;
    }
    // Neighbours: where this layer keeps its input's 16-bit copy (null:
    // nowhere), so that the layer before it can write that copy in the pass
    // that writes its output (set_gemm_output_copy, true: it will, every
    // forward); the model then tells this layer not to make it
    // (set_gemm_input_copy_made). Wired by the model after set_gemm_copies.
    virtual void* gemm_input_copy() const { return nullptr; }
    virtual void set_gemm_input_copy_made(bool made) { (void)made; }
    virtual bool set_gemm_output_copy(void* copy) {
        (void)copy;
        return false;
    }

    // If this layer ends in a softmax that the loss can fuse with, drop it so the
    // layer outputs logits; returns whether it did.
    virtual bool strip_final_softmax() { return false; }
    // Whether this layer's output is a softmax (before any stripping).
    virtual bool ends_in_softmax() const { return false; }

    // Called before each training step's forward, outside any recorded
    // graph: writes to backend memory what changes from step to step (dropout's
    // mask key), so that the work forward queues is the same every step and a
    // step recorded once can be replayed (train/step_graphs.hpp).
    virtual void prepare_step(const RunContext& ctx) { (void)ctx; }

    // `layer_index` keys random streams (dropout) so they differ between layers.
    void set_index(int index) { index_ = index; }
    int index() const { return index_; }

    // x: one pointer per input; y: the output. Never in place: y is not any x.
    virtual void forward(const RunContext& ctx, std::span<const float* const> x, float* y, int rows) = 0;
    // Writes parameter gradients (overwriting) and, for each dx[i] that is not
    // null, input i's gradient (overwriting; the model sums the gradients of
    // a tensor read by several layers). dy is not any dx[i].
    virtual void backward(const RunContext& ctx, std::span<const float* const> x, const float* y, const float* dy,
                          std::span<float* const> dx, int rows) = 0;
    // One-input forms (tests, and layers of one input).
    void forward(const RunContext& ctx, const float* x, float* y, int rows) {
        forward(ctx, std::span<const float* const>(&x, 1), y, rows);
    }
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx, int rows) {
        backward(ctx, std::span<const float* const>(&x, 1), y, dy, std::span<float* const>(&dx, 1), rows);
    }

    // A training step in which this replica has no rows (batch smaller than
    // the replica count): a layer that joins collectives in forward/backward
    // joins them here with zero contributions, so every replica makes the
    // same calls. Model runs forward_without_rows over the layers in order,
    // then backward_without_rows in reverse, as a normal step would.
    virtual void forward_without_rows(const RunContext& ctx) { (void)ctx; }
    virtual void backward_without_rows(const RunContext& ctx) { (void)ctx; }

protected:
    std::string name_;
    int index_ = 0;
    bool frozen_ = false;
    double lr_multiplier_ = 1.0;
    std::vector<std::string> input_names_;
};

// A layer of exactly one input: implements the one-input build, forward and
// backward; the model's span forms reach them.
class UnaryLayer : public Layer {
public:
    Shape build(std::span<const Shape> input_shapes) final;
    void forward(const RunContext& ctx, std::span<const float* const> x, float* y, int rows) final {
        forward(ctx, x[0], y, rows);
    }
    void backward(const RunContext& ctx, std::span<const float* const> x, const float* y, const float* dy,
                  std::span<float* const> dx, int rows) final {
        backward(ctx, x[0], y, dy, dx[0], rows);
    }

    virtual Shape build(const Shape& input_shape) = 0;
    virtual void forward(const RunContext& ctx, const float* x, float* y, int rows) = 0;
    virtual void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                          int rows) = 0;
};

}  // namespace gputrain::nn
