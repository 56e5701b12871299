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
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace gputrain::ops {

// The CPU kernels work on blocks of this many query rows at a time.
constexpr int kAttentionCpuBlock = 64;

// Floats of workspace the CPU's kernels need for `queries` query rows over at
// most `keys` keys (one forward, backward or decode call); GPUs need none.
inline size_t attention_cpu_tile_floats(int64_t queries, int64_t keys) {
    return 2 * static_cast<size_t>(std::min<int64_t>(queries, kAttentionCpuBlock)) * static_cast<size_t>(keys);
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
    float* cpu_tile;   // the CPU's workspace, attention_cpu_tile_floats(T, T) floats; GPUs ignore it
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
    float* cpu_tile;    // attention_cpu_tile_floats(T, T) floats on the CPU; GPUs ignore it
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
    float* cpu_tile;         // attention_cpu_tile_floats(1, position + 1) floats on the CPU; GPUs ignore it
};

}  // namespace gputrain::ops
