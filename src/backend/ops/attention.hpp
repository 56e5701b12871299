// Causal multi-head self-attention (GPT's masked attention; nn/attention.hpp
// is the layer). Kernels: backend/cpu/attention_kernels.cpp,
// backend/cuda/attention_kernels.cu (backend/kernels.hpp says how ops run).
//
// Common to the three ops: `rows` samples of T positions, `heads` heads of D
// columns each, C = heads * D. A qkv row holds a position's query in columns
// [0, C), its key in [C, 2C) and its value in [2C, 3C); head h reads columns
// h*D .. h*D + D - 1 of each. Row t of sample n of a [rows * T, ld] matrix is
// row n * T + t. Scores are S = q k^T / sqrt(D) (the scale 1 / sqrtf(D) in
// float), query t sees keys 0..t, P = softmax(S) by rows, and a head's output
// P v goes to columns h*D .. of the output row. No T x T matrix is kept
// between the ops: forward keeps each query row's log-sum-exp, from which
// backward recomputes P (flash attention's backward).
//
// Dropout on P (forward and backward, training only: nanoGPT's attn_dropout):
// with a key, element (t, j) of head h of the sample at place g of the
// global batch (g = first_sample + n) is kept, times 1 / (1 - rate), when
// math::hash_uniform(key, ((g * heads + h) * T + t) * T + j) >= rate, else
// dropped (attention_keep below), so that the mask depends on the sample's
// place in the global batch and not on the replica, and backward regenerates
// it from the key instead of keeping it. The log-sum-exp is that of the
// undropped P. With Z the factors and Pd = Z o P: out = Pd v; backward takes
// dV = Pd^T dO, dP = Z o (dO V^T), dS = P o (dP - delta), and delta =
// rowsum(dP o P) = rowsum(dO o out) still (sum_j P Z (dO . v_j) = dO . out).
//
// Rotary position embeddings (AttentionRotary, before the attention ops):
// RoPE in GPT-NeoX's and LLaMA's (Hugging Face) half-split form. Within each
// head's D columns of a query or key at position t, column i < D/2 pairs
// with column i + D/2 and the pair turns by the angle t * 10000^(-2i/D):
//   x'[i]       = x[i] cos - x[i + D/2] sin
//   x'[i + D/2] = x[i + D/2] cos + x[i] sin
// (not GPT-J's and Meta LLaMA's interleaved pairs 2i, 2i + 1). The angle's
// cosine and sine are formed in double and rounded to float, the same on
// every backend (rotary_cos_sin).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/math.hpp"

namespace gputrain::ops {

// The CPU kernels work on blocks of this many query rows at a time, each
// against only the keys its last row sees (the causal mask skips the rest).
constexpr int kAttentionCpuBlock = 16;

// Floats of workspace the CPU's kernels need for `queries` query rows over at
// most `keys` keys of D columns (one forward, backward or decode call); GPUs
// need none.
inline size_t attention_cpu_tile_floats(int64_t queries, int64_t keys, int64_t D) {
    // A head's keys and values transposed (D x keys each), two blocks of
    // scores, and a row of dropout factors.
    return (2 * static_cast<size_t>(D) + 2 * static_cast<size_t>(std::min<int64_t>(queries, kAttentionCpuBlock)) + 1) *
           static_cast<size_t>(keys);
}

// RoPE's base (GPT-NeoX, LLaMA).
constexpr double kRotaryBase = 10000.0;

// The cosine and sine of the angle of pair i (< D/2) at `position`.
GPUTRAIN_HD void rotary_cos_sin(int64_t position, int i, int D, float* c, float* s) {
    const double angle =
        static_cast<double>(position) * pow(kRotaryBase, -2.0 * static_cast<double>(i) / static_cast<double>(D));
    *c = static_cast<float>(cos(angle));
    *s = static_cast<float>(sin(angle));
}

// Attention dropout's factor of P[t, j]: 0 or keep_scale (1 / (1 - rate)),
// `row` = ((g * heads + h) * T + t) * T, the index of P[t, 0].
GPUTRAIN_HD float attention_keep(uint64_t key, uint64_t row, int j, float rate, float keep_scale) {
    return math::hash_uniform(key, row + static_cast<uint64_t>(j)) >= rate ? keep_scale : 0.0f;
}

// out = attention(qkv); lse[n, h, t] = log(sum over visible keys j of exp(S[t, j])).
struct AttentionForward {
    static constexpr const char* kName = "attention_forward";
    const float* qkv;  // [rows * T, ld_qkv], ld_qkv >= 3C
    int ld_qkv;
    float* out;        // [rows * T, ld_out], ld_out >= C; columns [0, C) overwritten
    int ld_out;
    float* lse;        // rows x heads x T (overwritten), or null
    int rows, T, heads, D;
    float* cpu_tile;   // the CPU's workspace, attention_cpu_tile_floats(T, T, D) floats; GPUs ignore it
    // Dropout on P (see above): the key's two 32-bit words in backend memory
    // (math::join_key_words), or null for none; rate in (0, 1); the place of
    // sample 0 in the global batch.
    const uint32_t* dropout_key = nullptr;
    float dropout_rate = 0.0f;
    int64_t first_sample = 0;
};

// dqkv = d(loss)/d(qkv) from dout = d(loss)/d(out) (overwritten: every
// element of columns [0, 3C) of its rows is written).
struct AttentionBackward {
    static constexpr const char* kName = "attention_backward";
    const float* qkv;   // as forward had it
    int ld_qkv;
    const float* out;   // forward's output
    const float* dout;  // its gradient, same layout (ld_out)
    int ld_out;
    const float* lse;   // forward's log-sum-exp, rows x heads x T
    float* dqkv;        // [rows * T, ld_dqkv], ld_dqkv >= 3C
    int ld_dqkv;
    float* delta;       // rows x heads x T floats of scratch: rowsum(dout * out) per head
    int rows, T, heads, D;
    float* cpu_tile;    // attention_cpu_tile_floats(T, T, D) floats on the CPU; GPUs ignore it
    // Forward's dropout, the same three values.
    const uint32_t* dropout_key = nullptr;
    float dropout_rate = 0.0f;
    int64_t first_sample = 0;
};

// Generation (a KV cache): one new position per sample at absolute index
// `position`. Writes the position's key and value into row `position` of the
// sample's caches, then attends over rows 0..position of them.
struct AttentionDecode {
    static constexpr const char* kName = "attention_decode";
    const float* qkv;        // [rows, ld_qkv]: the new position's query, key and value
    int ld_qkv;
    float* k_cache;          // sample n's row t at k_cache + n * cache_stride + t * C
    float* v_cache;          // likewise
    int64_t cache_stride;    // floats from one sample's cache to the next
    float* out;              // [rows, ld_out]
    int ld_out;
    int rows, heads, D;
    int position;
    float* cpu_tile;         // attention_cpu_tile_floats(1, position + 1, D) floats on the CPU; GPUs ignore it
};

// Rotary position embeddings on the queries and keys of qkv, in place:
// columns [0, 2C) of `rows` samples of T rows; row t of a sample is at
// position first_position + t. `inverse` turns each pair back (by the
// negative angle): the gradient of the rotation, for d(qkv) after backward.
// Columns [2C, 3C) (the values) are left alone. D must be even.
struct AttentionRotary {
    static constexpr const char* kName = "attention_rotary";
    float* qkv;  // [rows * T, ld], ld >= 2C
    int ld;
    int rows, T, heads, D;
    int64_t first_position;
    bool inverse;
};

}  // namespace gputrain::ops
