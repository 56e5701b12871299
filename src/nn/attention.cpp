#include "nn/attention.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>

#include "backend/ops/attention.hpp"
#include "core/error.hpp"
#include "core/shape.hpp"
#include "nn/dropout.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

namespace {

constexpr size_t kAlign = 256;
size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

std::string CausalSelfAttention::me() const { return "layer '" + name_ + "' (causal_self_attention): "; }

std::string CausalSelfAttention::detail() const {
    std::string s = std::to_string(heads_) + " heads";
    if (!use_bias_) s += ", no bias";
    if (dropout_ > 0.0f) {
        char buf[32];
        const auto end = std::to_chars(buf, buf + sizeof buf, dropout_).ptr;
        s += ", dropout " + std::string(buf, end);
    }
    if (rotary_) s += ", rotary";
    if (cache_length() > 0) s += ", cache of " + std::to_string(cache_length());
    return s;
}

Shape CausalSelfAttention::build(const Shape& input_shape) {
    if (input_shape.size() != 2)
        throw ConfigError(me() + "needs input (positions, width), got " + shape_to_string(input_shape, false) +
                          "; put an embedding layer before it (token ids to (positions, width))");
    T_ = input_shape[0];
    C_ = input_shape[1];
    if (C_ % heads_ != 0) {
        // The divisors of C nearest heads on either side.
        int64_t below = std::min(heads_, C_);
        while (C_ % below != 0) --below;
        int64_t above = heads_;
        while (above <= C_ && C_ % above != 0) ++above;
        std::string such = std::to_string(below);
        if (above <= C_) such += " or " + std::to_string(above);
        throw ConfigError(me() + "heads " + std::to_string(heads_) + " does not divide the width " +
                          std::to_string(C_) + "; use a divisor of it such as " + such);
    }
    D_ = C_ / heads_;
    if (rotary_ && D_ % 2 != 0) {
        // The head counts nearest `heads` that leave an even head size (none when the width is odd).
        std::string such;
        for (int64_t d = 1; d <= C_ && such.empty(); ++d)
            for (const int64_t h : {heads_ - d, heads_ + d})
                if (h >= 1 && h <= C_ && C_ % h == 0 && (C_ / h) % 2 == 0) {
                    such = ", such as heads: " + std::to_string(h);
                    break;
                }
        throw ConfigError(me() + "rotary turns pairs of a head's columns, and its head size (width " +
                          std::to_string(C_) + " / heads " + std::to_string(heads_) + ") is " + std::to_string(D_) +
                          ", odd; choose heads so that width / heads is even" +
                          (such.empty() ? " (the width is odd: make it even)" : such));
    }
    return input_shape;
}

std::vector<ParamSpec> CausalSelfAttention::param_specs() const {
    std::vector<ParamSpec> specs{{"qkv_kernel", {C_, 3 * C_}, Init::glorot_uniform}};
    if (use_bias_) specs.push_back({"qkv_bias", {3 * C_}, Init::zeros});
    specs.push_back({"out_kernel", {C_, C_}, Init::glorot_uniform});
    if (use_bias_) specs.push_back({"out_bias", {C_}, Init::zeros});
    return specs;
}

void CausalSelfAttention::bind(const std::vector<float*>& params, const std::vector<float*>& grads) {
    size_t i = 0;
    qkv_kernel_ = params[i];
    qkv_kernel_grad_ = grads[i++];
    if (use_bias_) {
        qkv_bias_ = params[i];
        qkv_bias_grad_ = grads[i++];
    }
    out_kernel_ = params[i];
    out_kernel_grad_ = grads[i++];
    if (use_bias_) {
        out_bias_ = params[i];
        out_bias_grad_ = grads[i++];
    }
}

int64_t CausalSelfAttention::scratch_per_sample() const {
    return cache_per_sample() + T_ * 3 * C_ + T_ * C_ + heads_ * T_;
}

void CausalSelfAttention::set_scratch(float* scratch) {
    if (dropout_ > 0.0f) {
        key_ = reinterpret_cast<uint32_t*>(scratch);
        scratch += kKeyFloats;
    }
    scratch_ = scratch;
}

// The dropout layer's key derivation and upload (nn/dropout.hpp), with another salt.
uint64_t CausalSelfAttention::key_of(const RunContext& ctx) const { return step_mask_key(ctx, index_, 0x2545f491u); }

void CausalSelfAttention::write_key(const RunContext& ctx) {
    upload_mask_key(ctx, key_, key_of(ctx), key_written_, written_key_);
}

void CausalSelfAttention::prepare_step(const RunContext& ctx) {
    if (ctx.training && dropout_ > 0.0f) write_key(ctx);
}

CausalSelfAttention::Parts CausalSelfAttention::parts(int rows) const {
    Parts p{};
    const size_t r = static_cast<size_t>(rows);
    p.qkv = scratch_ + r * static_cast<size_t>(cache_per_sample());
    p.o = p.qkv + r * static_cast<size_t>(T_ * 3 * C_);
    p.lse = p.o + r * static_cast<size_t>(T_ * C_);
    return p;
}

size_t CausalSelfAttention::tile_floats() const {
    return std::max(ops::attention_cpu_tile_floats(T_, T_, D_),
                    ops::attention_cpu_tile_floats(1, cache_length(), D_));
}

CausalSelfAttention::Work CausalSelfAttention::work(int rows) const {
    const size_t m = static_cast<size_t>(rows) * static_cast<size_t>(T_);
    char* at = workspace_;
    const auto take = [&at](size_t floats) {
        float* p = reinterpret_cast<float*>(at);
        at += round_up(floats * sizeof(float));
        return p;
    };
    Work w{};
    w.dout = take(m * static_cast<size_t>(C_));
    w.dqkv = take(m * static_cast<size_t>(3 * C_));
    w.delta = take(m * static_cast<size_t>(heads_));
    w.tile = take(tile_floats());
    return w;
}

size_t CausalSelfAttention::workspace_bytes(Backend& backend, int64_t max_rows) {
    (void)backend;
    const size_t m = static_cast<size_t>(max_rows) * static_cast<size_t>(T_);
    return round_up(m * static_cast<size_t>(C_) * sizeof(float)) +
           round_up(m * static_cast<size_t>(3 * C_) * sizeof(float)) +
           round_up(m * static_cast<size_t>(heads_) * sizeof(float)) + round_up(tile_floats() * sizeof(float));
}

size_t CausalSelfAttention::gemm_scratch_bytes(const Backend& backend, int64_t max_rows) const {
    const int m = static_cast<int>(max_rows * T_), c = static_cast<int>(C_), c3 = static_cast<int>(3 * C_);
    return std::max({backend.gemm_scratch_bytes(false, false, m, c3, c, c, c3),   // qkv = x W
                     backend.gemm_scratch_bytes(false, false, m, c, c, c, c),     // y = O W
                     backend.gemm_scratch_bytes(true, false, c, c, m, c, c),      // dW_out = O^T dy
                     backend.gemm_scratch_bytes(false, true, m, c, c, c, c),      // dO = dy W_out^T
                     backend.gemm_scratch_bytes(true, false, c, c3, m, c, c3),    // dW_qkv = x^T dqkv
                     backend.gemm_scratch_bytes(false, true, m, c, c3, c3, c3)}); // dx = dqkv W_qkv^T
}

void CausalSelfAttention::project_in(Backend& be, const float* x, float* qkv, int m) {
    const int c = static_cast<int>(C_), c3 = static_cast<int>(3 * C_);
    be.gemm(false, false, m, c3, c, 1.0f, x, c, qkv_kernel_, c3, 0.0f, qkv, c3);
    if (use_bias_) be.add_bias(qkv, qkv_bias_, m, c3);
}

void CausalSelfAttention::project_out(Backend& be, const float* o, float* y, int m) {
    const int c = static_cast<int>(C_);
    be.gemm(false, false, m, c, c, 1.0f, o, c, out_kernel_, c, 0.0f, y, c);
    if (use_bias_) be.add_bias(y, out_bias_, m, c);
}

void CausalSelfAttention::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    Backend& be = ctx.backend;
    const Parts p = parts(rows);
    const Work w = work(rows);
    const int c = static_cast<int>(C_), t = static_cast<int>(T_), h = static_cast<int>(heads_),
              d = static_cast<int>(D_);
    if (ctx.position >= 0 && cache_length() > 0) {
        if (ctx.position >= cache_length())
            throw Error(me() + "position " + std::to_string(ctx.position) + " is past its key/value cache of " +
                        std::to_string(cache_length()) + " positions; generate at most " +
                        std::to_string(cache_length()) + " positions or give the layer a larger length");
        project_in(be, x, p.qkv, rows);
        // The new position's query and key turned by its absolute position (the cache keeps turned keys).
        if (rotary_) run_op(be, ops::AttentionRotary{p.qkv, 3 * c, rows, 1, h, d, ctx.position, false});
        float* k_cache = scratch_;
        run_op(be, ops::AttentionDecode{p.qkv, 3 * c, k_cache, k_cache + cache_length() * C_, cache_per_sample(),
                                        p.o, c, rows, h, d, static_cast<int>(ctx.position), w.tile});
        project_out(be, p.o, y, rows);
        return;
    }
    if (ctx.position > 0)
        throw Error(me() + "position " + std::to_string(ctx.position) +
                    " needs a key/value cache, which the layer keeps only when built on one position (input (1, " +
                    std::to_string(C_) + ")) with length > 1");
    const int m = rows * t;
    project_in(be, x, p.qkv, m);
    // qkv keeps the turned queries and keys, which backward reads.
    if (rotary_) run_op(be, ops::AttentionRotary{p.qkv, 3 * c, rows, t, h, d, 0, false});
    ops::AttentionForward op{p.qkv, 3 * c, p.o, c, p.lse, rows, t, h, d, w.tile};
    last_forward_training_ = ctx.training && dropout_ > 0.0f;
    if (last_forward_training_) {
        // Nothing to write when prepare_step ran for this step (always in
        // training); a caller that skipped it still gets the step's mask.
        write_key(ctx);
        op.dropout_key = key_;
        op.dropout_rate = dropout_;
        op.first_sample = ctx.row_offset;
    }
    run_op(be, op);
    project_out(be, p.o, y, m);
}

void CausalSelfAttention::backward(const RunContext& ctx, const float* x, const float* y, const float* dy, float* dx,
                                   int rows) {
    (void)y;
    Backend& be = ctx.backend;
    const Parts p = parts(rows);
    const Work w = work(rows);
    const int c = static_cast<int>(C_), c3 = static_cast<int>(3 * C_), t = static_cast<int>(T_),
              h = static_cast<int>(heads_), d = static_cast<int>(D_);
    const int m = rows * t;
    // The output projection: its gradients, and dO.
    be.gemm(true, false, c, c, m, 1.0f, p.o, c, dy, c, 0.0f, out_kernel_grad_, c);
    if (use_bias_) be.sum_rows(dy, out_bias_grad_, m, c);
    be.gemm(false, true, m, c, c, 1.0f, dy, c, out_kernel_, c, 0.0f, w.dout, c);
    ops::AttentionBackward op{p.qkv, c3, p.o, w.dout, c, p.lse, w.dqkv, c3, w.delta, rows, t, h, d, w.tile};
    if (last_forward_training_) {  // forward's mask, from the same key
        op.dropout_key = key_;
        op.dropout_rate = dropout_;
        op.first_sample = ctx.row_offset;
    }
    run_op(be, op);
    // d(qkv) of the queries and keys before they were turned: turned back.
    if (rotary_) run_op(be, ops::AttentionRotary{w.dqkv, c3, rows, t, h, d, 0, true});
    // The input projection.
    be.gemm(true, false, c, c3, m, 1.0f, x, c, w.dqkv, c3, 0.0f, qkv_kernel_grad_, c3);
    if (use_bias_) be.sum_rows(w.dqkv, qkv_bias_grad_, m, c3);
    if (dx) be.gemm(false, true, m, c, c3, 1.0f, w.dqkv, c3, qkv_kernel_, c3, 0.0f, dx, c);
}

// causal_self_attention: heads, use_bias, length, dropout, rotary.
void add_attention_layer(LayerRegistry& registry) {
    registry.add("causal_self_attention",
                 {"heads", "use_bias", "length", "dropout", "rotary", "trainable", "lr_multiplier"},
                 [](LayerArgs& args) -> std::unique_ptr<Layer> {
                     const int64_t heads = args.positive_int("heads");
                     const bool use_bias = args.flag("use_bias", true);
                     // 0 (the default, written out in the resolved config): no cache.
                     const std::string text = args.word("length", "0");
                     char* end = nullptr;
                     errno = 0;
                     const long long length = std::strtoll(text.c_str(), &end, 10);
                     if (text.empty() || *end != '\0' || errno == ERANGE || length < 0 ||
                         length > kMaxSampleElements)
                         args.fail("length", "expected a positive integer (or 0: the input's positions), got '" +
                                                 text + "'");
                     float dropout = 0.0f;
                     if (args.has("dropout")) {
                         const double rate = args.number("dropout", 0.0, 0.0, 1.0);
                         if (static_cast<float>(rate) >= 1.0f)  // applied in fp32, where it would drop everything
                             args.fail("dropout", "is 1 in float32, which drops every attention weight; give at most "
                                                  "0.9999999");
                         dropout = static_cast<float>(rate);
                     }
                     // Read only when given, as dropout: a config without it resolves (and digests) as before.
                     const bool rotary = args.has("rotary") && args.flag("rotary", false);
                     args.finish();
                     return std::make_unique<CausalSelfAttention>(heads, use_bias, length, dropout, rotary);
                 });
}

}  // namespace gputrain::nn
