// CausalSelfAttention: GPT's masked multi-head self-attention (nanoGPT's
// CausalSelfAttention) over an input of (T, C) per sample:
//   qkv = x qkv_kernel + qkv_bias             (T x 3C: queries, keys, values)
//   O_h = dropout(softmax(q_h k_h^T / sqrt(D), causal)) v_h   for each head h (D = C / heads)
//   y   = [O_0 .. O_{heads-1}] out_kernel + out_bias
// `dropout` (nanoGPT's attn_dropout) drops attention probabilities in
// training only; its mask is a hash of a per-step key (as the dropout
// layer's: seed, layer, epoch, step) and each element's place, the sample's
// place in the GLOBAL batch included, so it does not depend on the replicas
// and backward regenerates it (ops/attention.hpp). `rotary` turns each
// head's queries and keys by their position first (RoPE, GPT-NeoX's half
// split: ops::AttentionRotary), in training, inference and generation alike;
// backward turns the gradients of q and k back.
// The attention itself is backend/ops/attention.hpp. Between forward and
// backward the layer keeps qkv, O and each query row's log-sum-exp (no T x T
// probabilities). Built on one position (input (1, C)) with length > 1, it
// also keeps a key and a value cache of `length` positions per sample for
// generation (RunContext::position).
#pragma once

#include "nn/layer.hpp"

namespace gputrain::nn {

class CausalSelfAttention : public UnaryLayer {
public:
    // heads: divides the width C (checked by build); length: the positions of
    // the generation cache (0: none; used only when built on input (1, C)).
    // dropout: the rate on the attention probabilities in training, in [0, 1);
    // rotary: RoPE on the queries and keys (the head size must be even).
    CausalSelfAttention(int64_t heads, bool use_bias, int64_t length = 0, float dropout = 0.0f, bool rotary = false)
        : heads_(heads), use_bias_(use_bias), length_(length), dropout_(dropout), rotary_(rotary) {}

    std::string type() const override { return "causal_self_attention"; }
    std::string detail() const override;
    Shape build(const Shape& input_shape) override;
    // qkv_kernel [C, 3C], qkv_bias [3C], out_kernel [C, C], out_bias [C] (biases with use_bias).
    std::vector<ParamSpec> param_specs() const override;
    void bind(const std::vector<float*>& params, const std::vector<float*>& grads) override;
    // Per sample: the caches (generation only: 2 * length * C), then qkv
    // (3TC), O (TC) and the log-sum-exps (heads * T). With dropout, the
    // block starts with the step's mask key (two 32-bit words, padded to 256
    // bytes: scratch_fixed).
    int64_t scratch_per_sample() const override;
    int64_t scratch_fixed() const override { return dropout_ > 0.0f ? kKeyFloats : 0; }
    void set_scratch(float* scratch) override;
    // The step's dropout key to backend memory (as the dropout layer's).
    void prepare_step(const RunContext& ctx) override;
    size_t workspace_bytes(Backend& backend, int64_t max_rows) override;
    void set_workspace(void* workspace, size_t bytes) override {
        (void)bytes;
        workspace_ = static_cast<char*>(workspace);
    }
    size_t gemm_scratch_bytes(const Backend& backend, int64_t max_rows) const override;

    // With ctx.position >= 0 on a layer built for generation: the one
    // position of each sample at that index, through the caches.
    void forward(const RunContext& ctx, const float* x, float* y, int rows) override;
    void backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                  int rows) override;

    int64_t heads() const { return heads_; }
    float dropout() const { return dropout_; }
    bool rotary() const { return rotary_; }
    bool generates() const { return cache_length() > 0; }

private:
    static constexpr int64_t kKeyFloats = 64;
    int64_t heads_;
    bool use_bias_;
    int64_t length_;
    float dropout_;
    bool rotary_;
    uint32_t* key_ = nullptr;  // dropout's key words in backend memory
    bool key_written_ = false;
    uint64_t written_key_ = 0;
    bool last_forward_training_ = false;
    int64_t T_ = 0, C_ = 0, D_ = 0;
    float* qkv_kernel_ = nullptr;
    float* qkv_bias_ = nullptr;
    float* out_kernel_ = nullptr;
    float* out_bias_ = nullptr;
    float* qkv_kernel_grad_ = nullptr;
    float* qkv_bias_grad_ = nullptr;
    float* out_kernel_grad_ = nullptr;
    float* out_bias_grad_ = nullptr;
    float* scratch_ = nullptr;
    char* workspace_ = nullptr;

    // Positions of the generation cache: length when built on one position, else 0.
    int64_t cache_length() const { return T_ == 1 && length_ > 1 ? length_ : 0; }
    int64_t cache_per_sample() const { return 2 * cache_length() * C_; }
    // The scratch's parts for a call on `rows` samples: the caches sit at
    // fixed places (sample n's at n * cache_per_sample()), the rest after
    // all of them.
    struct Parts {
        float* qkv;
        float* o;
        float* lse;
    };
    Parts parts(int rows) const;
    // The workspace's parts (256-byte aligned): dO, dqkv, delta, the CPU's tile.
    struct Work {
        float* dout;
        float* dqkv;
        float* delta;
        float* tile;
    };
    Work work(int rows) const;
    size_t tile_floats() const;
    std::string me() const;
    uint64_t key_of(const RunContext& ctx) const;
    void write_key(const RunContext& ctx);
    void project_in(Backend& be, const float* x, float* qkv, int m);
    void project_out(Backend& be, const float* o, float* y, int m);
};

}  // namespace gputrain::nn
