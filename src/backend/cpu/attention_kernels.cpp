// The CPU's kernels of backend/ops/attention.hpp: per (sample, head), blocks
// of kAttentionCpuBlock query rows against only the keys they see, with the
// products in the backend's gemm and the softmax in between in a tile of the
// workspace. The head's keys (and in backward its values) are first copied
// transposed into the tile, so that every product is A B or A^T B, the shapes
// the small-GEMM kernel (cpu/cpu_small_gemm.hpp) takes instead of a library's
// sgemm with B transposed (with the 16-row blocks: forward and backward 1.5x
// faster on the small GPT's heads of 32, tests/unit/backend/bench_gpt_ops).
// Single-threaded, as every CPU replica is.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cpu/vector_math.hpp"
#include "backend/ops/attention.hpp"

namespace gputrain::cpu_kernels {

namespace {

constexpr int kBlock = ops::kAttentionCpuBlock;

float scale_of(int d) { return 1.0f / std::sqrt(static_cast<float>(d)); }

// One (sample, head): `queries` query rows at absolute positions first,
// first + 1, ...; query i sees keys 0..first + i.
struct HeadView {
    const float* q;
    int ld_q;
    const float* kt;  // the keys transposed: D rows of ld_kt, column j = key j
    int ld_kt;
    const float* v;
    int ld_kv;
    float* o;
    int ld_o;
    float* lse;  // lse[i], or null
    int queries, first, D;
    float scale;
    // Dropout on P: with `dropout`, query i's row of the mask starts at
    // index mask_row + i * mask_stride of the hash (ops/attention.hpp).
    bool dropout = false;
    uint64_t key = 0, mask_row = 0, mask_stride = 0;
    float rate = 0.0f, keep_scale = 1.0f;
};

struct Dropout {
    bool on = false;
    uint64_t key = 0;
    float rate = 0.0f, keep_scale = 1.0f;
};

Dropout dropout_of(const uint32_t* key_words, float rate) {
    Dropout d;
    if (key_words == nullptr || !(rate > 0.0f)) return d;
    d.on = true;
    d.key = math::join_key_words(key_words);
    d.rate = rate;
    d.keep_scale = 1.0f / (1.0f - rate);
    return d;
}

// The hash's index of P[0, 0] of head h of the sample at place g of the global batch.
uint64_t mask_origin(int64_t g, int heads, int h, int T) {
    return (static_cast<uint64_t>(g) * static_cast<uint64_t>(heads) + static_cast<uint64_t>(h)) *
           static_cast<uint64_t>(T) * static_cast<uint64_t>(T);
}

// dst[d * ld_dst + j] = src[j * ld_src + d] for j < count, d < D: a head's
// keys or values, transposed.
void transpose_into(const float* src, int ld_src, int count, int D, float* dst, int ld_dst) {
    cpu::transpose(src, static_cast<size_t>(ld_src), static_cast<size_t>(count), static_cast<size_t>(D), dst,
                   static_cast<size_t>(ld_dst));
}

// o = softmax(scale q k^T, causal) v, and lse, over blocks of query rows;
// `tile` holds min(queries, kBlock) * (first + queries) floats.
void attend(Backend& be, const HeadView& h, float* tile) {
    for (int i0 = 0; i0 < h.queries; i0 += kBlock) {
        const int bq = std::min(kBlock, h.queries - i0);
        const int keys = h.first + i0 + bq;  // what the block's last row sees
        float* s = tile;
        be.gemm(false, false, bq, keys, h.D, h.scale, h.q + static_cast<size_t>(i0) * h.ld_q, h.ld_q, h.kt, h.ld_kt,
                0.0f, s, keys);
        for (int r = 0; r < bq; ++r) {
            float* row = s + static_cast<size_t>(r) * keys;
            const int visible = h.first + i0 + r + 1;
            const float lse = cpu::softmax_row(row, static_cast<size_t>(visible), static_cast<size_t>(keys));
            if (h.dropout) {
                const uint64_t at = h.mask_row + static_cast<uint64_t>(i0 + r) * h.mask_stride;
                for (int j = 0; j < visible; ++j) row[j] *= ops::attention_keep(h.key, at, j, h.rate, h.keep_scale);
            }
            if (h.lse) h.lse[i0 + r] = lse;
        }
        be.gemm(false, false, bq, h.D, keys, 1.0f, s, keys, h.v, h.ld_kv, 0.0f,
                h.o + static_cast<size_t>(i0) * h.ld_o, h.ld_o);
    }
}

void attention_forward(Backend& be, const ops::AttentionForward& op) {
    const int C = op.heads * op.D;
    const Dropout drop = dropout_of(op.dropout_key, op.dropout_rate);
    float* kt = op.cpu_tile;  // D x T, then the scores
    float* scores = kt + static_cast<size_t>(op.D) * op.T;
    for (int n = 0; n < op.rows; ++n) {
        const float* qkv = op.qkv + static_cast<size_t>(n) * op.T * op.ld_qkv;
        for (int hd = 0; hd < op.heads; ++hd) {
            const int col = hd * op.D;
            transpose_into(qkv + C + col, op.ld_qkv, op.T, op.D, kt, op.T);
            HeadView h{qkv + col, op.ld_qkv, kt, op.T, qkv + 2 * C + col, op.ld_qkv,
                       op.out + static_cast<size_t>(n) * op.T * op.ld_out + col, op.ld_out,
                       op.lse ? op.lse + (static_cast<size_t>(n) * op.heads + hd) * op.T : nullptr,
                       op.T, 0, op.D, scale_of(op.D)};
            if (drop.on) {
                h.dropout = true;
                h.key = drop.key;
                h.mask_row = mask_origin(op.first_sample + n, op.heads, hd, op.T);
                h.mask_stride = static_cast<uint64_t>(op.T);
                h.rate = drop.rate;
                h.keep_scale = drop.keep_scale;
            }
            attend(be, h, scores);
        }
    }
}

void attention_backward(Backend& be, const ops::AttentionBackward& op) {
    const int C = op.heads * op.D, D = op.D, T = op.T;
    const float scale = scale_of(D);
    const Dropout drop = dropout_of(op.dropout_key, op.dropout_rate);
    float* kt = op.cpu_tile;  // D x T each, then the two blocks of scores and a row of factors
    float* vt = kt + static_cast<size_t>(D) * T;
    float* p = vt + static_cast<size_t>(D) * T;
    for (int n = 0; n < op.rows; ++n) {
        const size_t first_row = static_cast<size_t>(n) * T;
        for (int hd = 0; hd < op.heads; ++hd) {
            const int col = hd * D;
            const float* q = op.qkv + first_row * op.ld_qkv + col;
            const float* k = q + C;
            const float* v = q + 2 * C;
            const float* o = op.out + first_row * op.ld_out + col;
            const float* dout = op.dout + first_row * op.ld_out + col;
            const float* lse = op.lse + (static_cast<size_t>(n) * op.heads + hd) * T;
            float* delta = op.delta + (static_cast<size_t>(n) * op.heads + hd) * T;
            float* dq = op.dqkv + first_row * op.ld_dqkv + col;
            float* dk = dq + C;
            float* dv = dq + 2 * C;
            transpose_into(k, op.ld_qkv, T, D, kt, T);
            transpose_into(v, op.ld_qkv, T, D, vt, T);
            for (int t = 0; t < T; ++t) {
                const float* a = o + static_cast<size_t>(t) * op.ld_out;
                const float* b = dout + static_cast<size_t>(t) * op.ld_out;
                delta[t] = cpu::dot(a, b, static_cast<size_t>(D));
                std::fill_n(dk + static_cast<size_t>(t) * op.ld_dqkv, D, 0.0f);
                std::fill_n(dv + static_cast<size_t>(t) * op.ld_dqkv, D, 0.0f);
            }
            for (int i0 = 0; i0 < T; i0 += kBlock) {
                const int bq = std::min(kBlock, T - i0);
                const int keys = i0 + bq;
                float* ds = p + static_cast<size_t>(bq) * keys;
                float* z = ds + static_cast<size_t>(bq) * keys;  // a row's dropout factors
                const float* q_blk = q + static_cast<size_t>(i0) * op.ld_qkv;
                const float* dout_blk = dout + static_cast<size_t>(i0) * op.ld_out;
                // P recomputed from the scores and forward's log-sum-exp.
                be.gemm(false, false, bq, keys, D, scale, q_blk, op.ld_qkv, kt, T, 0.0f, p, keys);
                // dP = dO V^T
                be.gemm(false, false, bq, keys, D, 1.0f, dout_blk, op.ld_out, vt, T, 0.0f, ds, keys);
                for (int r = 0; r < bq; ++r) {
                    float* prow = p + static_cast<size_t>(r) * keys;
                    float* dsrow = ds + static_cast<size_t>(r) * keys;
                    const int visible = i0 + r + 1;
                    const float l = lse[i0 + r], dl = delta[i0 + r];
                    if (drop.on) {
                        // dP = Z o (dO V^T); dS = P o (dP - delta); then P becomes Z o P for dV.
                        const uint64_t at = mask_origin(op.first_sample + n, op.heads, hd, T) +
                                            static_cast<uint64_t>(i0 + r) * static_cast<uint64_t>(T);
                        for (int j = 0; j < visible; ++j) {
                            z[j] = ops::attention_keep(drop.key, at, j, drop.rate, drop.keep_scale);
                            dsrow[j] *= z[j];
                        }
                        cpu::softmax_grad_row(prow, dsrow, static_cast<size_t>(visible), l, dl);
                        for (int j = 0; j < visible; ++j) prow[j] *= z[j];
                    } else {
                        cpu::softmax_grad_row(prow, dsrow, static_cast<size_t>(visible), l, dl);
                    }
                    std::fill(prow + visible, prow + keys, 0.0f);
                    std::fill(dsrow + visible, dsrow + keys, 0.0f);
                }
                // dV += P^T dO (P with dropout's factors), dQ = scale dS K, dK += scale dS^T Q
                be.gemm(true, false, keys, D, bq, 1.0f, p, keys, dout_blk, op.ld_out, 1.0f, dv, op.ld_dqkv);
                be.gemm(false, false, bq, D, keys, scale, ds, keys, k, op.ld_qkv, 0.0f,
                        dq + static_cast<size_t>(i0) * op.ld_dqkv, op.ld_dqkv);
                be.gemm(true, false, keys, D, bq, scale, ds, keys, q_blk, op.ld_qkv, 1.0f, dk, op.ld_dqkv);
            }
        }
    }
}

void attention_decode(Backend& be, const ops::AttentionDecode& op) {
    const int C = op.heads * op.D;
    for (int n = 0; n < op.rows; ++n) {
        const float* qkv = op.qkv + static_cast<size_t>(n) * op.ld_qkv;
        float* kc = op.k_cache + static_cast<size_t>(n) * op.cache_stride;
        float* vc = op.v_cache + static_cast<size_t>(n) * op.cache_stride;
        std::memcpy(kc + static_cast<size_t>(op.position) * C, qkv + C, sizeof(float) * C);
        std::memcpy(vc + static_cast<size_t>(op.position) * C, qkv + 2 * C, sizeof(float) * C);
        const int keys = op.position + 1;
        float* kt = op.cpu_tile;
        for (int hd = 0; hd < op.heads; ++hd) {
            const int col = hd * op.D;
            transpose_into(kc + col, C, keys, op.D, kt, keys);
            HeadView h{qkv + col, op.ld_qkv, kt, keys, vc + col, C,
                       op.out + static_cast<size_t>(n) * op.ld_out + col, op.ld_out, nullptr,
                       1, op.position, op.D, scale_of(op.D)};
            attend(be, h, kt + static_cast<size_t>(op.D) * keys);
        }
    }
}

// The angles of the block's positions are shared by every sample and head:
// a table of T x D/2 cosines and sines first.
void attention_rotary(Backend&, const ops::AttentionRotary& op) {
    const int half = op.D / 2, C = op.heads * op.D;
    thread_local std::vector<float> table;
    table.resize(2 * static_cast<size_t>(op.T) * static_cast<size_t>(half));
    for (int t = 0; t < op.T; ++t)
        for (int i = 0; i < half; ++i) {
            const size_t at = 2 * (static_cast<size_t>(t) * half + i);
            ops::rotary_cos_sin(op.first_position + t, i, op.D, &table[at], &table[at + 1]);
            if (op.inverse) table[at + 1] = -table[at + 1];
        }
    for (int n = 0; n < op.rows; ++n)
        for (int t = 0; t < op.T; ++t) {
            float* row = op.qkv + (static_cast<size_t>(n) * op.T + t) * op.ld;
            const float* cs = table.data() + 2 * static_cast<size_t>(t) * half;
            for (int part = 0; part < 2 * C; part += op.D) {  // every head of the queries, then of the keys
                float* x = row + part;
                for (int i = 0; i < half; ++i) {
                    const float c = cs[2 * i], s = cs[2 * i + 1], a = x[i], b = x[i + half];
                    x[i] = a * c - b * s;
                    x[i + half] = b * c + a * s;
                }
            }
        }
}

}  // namespace

void add_attention(KernelTable& table) {
    table.add<ops::AttentionForward, &attention_forward>();
    table.add<ops::AttentionBackward, &attention_backward>();
    table.add<ops::AttentionDecode, &attention_decode>();
    table.add<ops::AttentionRotary, &attention_rotary>();
}

}  // namespace gputrain::cpu_kernels
