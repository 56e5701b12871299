// The CUDA backend's kernels of backend/ops/attention.hpp, flash-attention
// style: no T x T matrix in memory, only each query row's log-sum-exp.
//
// Every kernel runs blocks of kWarps warps over a tile of kOwnRows rows it
// owns (query rows for forward and dQ, key rows for dK/dV), kRowsPerWarp per
// warp, for one (sample, head): grid (row tiles, heads, samples). It walks the
// other side in tiles of 32 rows staged in shared memory, one lane per row of
// the tile for the dot products (scores and dP), and each lane owns the
// output columns lane, lane + 32, ... (D <= kMaxHeadSize) of its rows'
// accumulators. The softmax runs online (forward) or from the log-sum-exp
// (backward). Each output element is written by exactly one thread: no
// atomics, the same bits every run. Dropout on P (ops/attention.hpp) hashes
// each element's place where the element is formed; the key's words are read
// from backend memory by every block.
#include <cfloat>
#include <cmath>
#include <string>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/ops/attention.hpp"

namespace gputrain::cuda_kernels {

namespace {

constexpr int kMaxHeadSize = 128;
constexpr int kLaneCols = kMaxHeadSize / kWarpSize;  // accumulator columns per lane
constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 2;
constexpr int kOwnRows = kWarps * kRowsPerWarp;
constexpr int kTile = kWarpSize;  // rows of the other side per step

// Row stride in shared memory of a tile read one lane per row: odd, so that
// the 32 lanes reading the same column of 32 rows hit 32 different banks.
__host__ __device__ inline int padded(int d) { return d % 2 == 0 ? d + 1 : d; }

__device__ __forceinline__ float warp_max(float x) {
    for (int off = kWarpSize / 2; off > 0; off /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
    return x;
}
__device__ __forceinline__ float warp_sum(float x) {
    for (int off = kWarpSize / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}

__device__ __forceinline__ float dot(const float* a, const float* b, int d) {
    float s = 0.0f;
    for (int i = 0; i < d; ++i) s = fmaf(a[i], b[i], s);
    return s;
}

// Forward over one (sample, head), also used by decode: `queries` query rows
// at absolute positions first, first + 1, ...; query i sees keys 0..first + i.
struct ForwardArgs {
    const float* q;      // sample n's query i: q + n * q_sample + i * ld_q (+ head column)
    long long q_sample;
    int ld_q;
    const float* k;      // sample n's key j: k + n * kv_sample + j * ld_kv (+ head column)
    const float* v;
    long long kv_sample;
    int ld_kv;
    float* o;            // like q
    long long o_sample;
    int ld_o;
    float* lse;          // lse[(n * heads + h) * queries + i], or null
    int heads, D, queries, first;
    float scale;
    // Dropout on P (training's forward only: queries = T, first = 0): the
    // key's words or null, the rate, 1 / (1 - rate), sample 0's place in the
    // global batch.
    const uint32_t* dropout_key;
    float rate, keep_scale;
    long long first_sample;
};

// The hash's index of P[i, 0] of head h of the sample at place g of the global batch.
__device__ __forceinline__ uint64_t mask_row(long long g, int heads, int h, int T, int i) {
    return ((static_cast<uint64_t>(g) * static_cast<uint64_t>(heads) + static_cast<uint64_t>(h)) *
                static_cast<uint64_t>(T) +
            static_cast<uint64_t>(i)) *
           static_cast<uint64_t>(T);
}

// Shared memory: own queries [kOwnRows][D], keys [kTile][padded(D)], values [kTile][D].
size_t forward_shared_bytes(int d) {
    return sizeof(float) * (static_cast<size_t>(kOwnRows) * d + static_cast<size_t>(kTile) * padded(d) +
                            static_cast<size_t>(kTile) * d);
}

__global__ void __launch_bounds__(kWarps * kWarpSize) attention_forward_kernel(ForwardArgs a) {
    extern __shared__ float smem[];
    const int D = a.D, dp = padded(D);
    float* qs = smem;
    float* ks = qs + kOwnRows * D;
    float* vs = ks + kTile * dp;
    const int n = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * kOwnRows;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int col = h * D;
    const float* q = a.q + n * a.q_sample + col;
    const float* k = a.k + n * a.kv_sample + col;
    const float* v = a.v + n * a.kv_sample + col;
    const bool dropout = a.dropout_key != nullptr;
    const uint64_t key = dropout ? math::join_key_words(a.dropout_key) : 0;

    for (int idx = threadIdx.x; idx < kOwnRows * D; idx += blockDim.x) {
        const int r = idx / D, d = idx % D, i = i0 + r;
        qs[idx] = i < a.queries ? q[static_cast<long long>(i) * a.ld_q + d] : 0.0f;
    }
    float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kLaneCols];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
        m[r] = -FLT_MAX;
        l[r] = 0.0f;
#pragma unroll
        for (int c = 0; c < kLaneCols; ++c) acc[r][c] = 0.0f;
    }
    const int last_key = a.first + min(i0 + kOwnRows, a.queries) - 1;  // what the tile's last query sees
    for (int j0 = 0; j0 <= last_key; j0 += kTile) {
        __syncthreads();  // the previous tile is read by every warp
        for (int idx = threadIdx.x; idx < kTile * D; idx += blockDim.x) {
            const int j = idx / D, d = idx % D, key = j0 + j;
            const bool in = key <= last_key;
            ks[j * dp + d] = in ? k[static_cast<long long>(key) * a.ld_kv + d] : 0.0f;
            vs[j * D + d] = in ? v[static_cast<long long>(key) * a.ld_kv + d] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
            const int own = warp * kRowsPerWarp + r, i = i0 + own;
            const int limit = a.first + i;  // the last key query i sees
            if (i >= a.queries || j0 > limit) continue;  // the same for the whole warp
            const bool visible = j0 + lane <= limit;
            const float s = visible ? dot(qs + own * D, ks + lane * dp, D) * a.scale : -FLT_MAX;
            const float m_new = fmaxf(m[r], warp_max(s));  // key j0 is visible: finite
            const float p = visible ? expf(s - m_new) : 0.0f;
            const float corr = expf(m[r] - m_new);
            l[r] = l[r] * corr + warp_sum(p);  // the undropped sum
            m[r] = m_new;
            const float pd = dropout && visible
                                 ? p * ops::attention_keep(key, mask_row(a.first_sample + n, a.heads, h, a.queries, i),
                                                           j0 + lane, a.rate, a.keep_scale)
                                 : p;
#pragma unroll
            for (int c = 0; c < kLaneCols; ++c) acc[r][c] *= corr;
            const int count = min(kTile, limit - j0 + 1);
            for (int j = 0; j < count; ++j) {
                const float pj = __shfl_sync(0xffffffffu, pd, j);
#pragma unroll
                for (int c = 0; c < kLaneCols; ++c) {
                    const int d = lane + c * kWarpSize;
                    if (d < D) acc[r][c] = fmaf(pj, vs[j * D + d], acc[r][c]);
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
        const int i = i0 + warp * kRowsPerWarp + r;
        if (i >= a.queries) continue;
        const float inv = 1.0f / l[r];
        float* o = a.o + n * a.o_sample + static_cast<long long>(i) * a.ld_o + col;
#pragma unroll
        for (int c = 0; c < kLaneCols; ++c) {
            const int d = lane + c * kWarpSize;
            if (d < D) o[d] = acc[r][c] * inv;
        }
        if (a.lse && lane == 0) a.lse[(static_cast<long long>(n) * a.heads + h) * a.queries + i] = m[r] + logf(l[r]);
    }
}

struct BackwardArgs {
    const float* qkv;
    int ld_qkv;
    const float* out;
    const float* dout;
    int ld_out;
    const float* lse;
    float* delta;
    float* dqkv;
    int ld_dqkv;
    int rows, T, heads, D;
    float scale;
    const uint32_t* dropout_key;  // as ForwardArgs
    float rate, keep_scale;
    long long first_sample;
};

// delta[(n * heads + h) * T + t] = sum over d of dout * out in head h's columns: one warp a row.
__global__ void attention_delta_kernel(BackwardArgs a) {
    const long long items = static_cast<long long>(a.rows) * a.heads * a.T;
    for (long long w = warp_index(); w < items; w += warp_count()) {
        const int t = static_cast<int>(w % a.T);
        const long long nh = w / a.T;
        const int h = static_cast<int>(nh % a.heads), n = static_cast<int>(nh / a.heads);
        const long long off = (static_cast<long long>(n) * a.T + t) * a.ld_out + static_cast<long long>(h) * a.D;
        float s = 0.0f;
        for (int d = lane_index(); d < a.D; d += kWarpSize) s = fmaf(a.out[off + d], a.dout[off + d], s);
        s = warp_sum(s);
        if (lane_index() == 0) a.delta[w] = s;
    }
}

// Shared memory of both backward kernels: two own [kOwnRows][D] blocks, two
// [kTile][padded(D)] tiles and kTile log-sum-exps and deltas.
size_t backward_shared_bytes(int d) {
    return sizeof(float) *
           (2 * static_cast<size_t>(kOwnRows) * d + 2 * static_cast<size_t>(kTile) * padded(d) + 2 * kTile);
}

// dQ for a tile of query rows: dq_i = scale * sum_j dS_ij k_j over the keys j <= i.
__global__ void __launch_bounds__(kWarps * kWarpSize) attention_dq_kernel(BackwardArgs a) {
    extern __shared__ float smem[];
    const int D = a.D, dp = padded(D), C = a.heads * D;
    float* qs = smem;
    float* dos = qs + kOwnRows * D;
    float* ks = dos + kOwnRows * D;
    float* vs = ks + kTile * dp;
    const int n = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * kOwnRows;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const long long first_row = static_cast<long long>(n) * a.T;
    const float* q = a.qkv + first_row * a.ld_qkv + h * D;
    const float* k = q + C;
    const float* v = q + 2 * C;
    const float* dout = a.dout + first_row * a.ld_out + h * D;
    const float* lse = a.lse + (static_cast<long long>(n) * a.heads + h) * a.T;
    const float* delta = a.delta + (static_cast<long long>(n) * a.heads + h) * a.T;
    const bool dropout = a.dropout_key != nullptr;
    const uint64_t key = dropout ? math::join_key_words(a.dropout_key) : 0;

    for (int idx = threadIdx.x; idx < kOwnRows * D; idx += blockDim.x) {
        const int r = idx / D, d = idx % D, i = i0 + r;
        const bool in = i < a.T;
        qs[idx] = in ? q[static_cast<long long>(i) * a.ld_qkv + d] : 0.0f;
        dos[idx] = in ? dout[static_cast<long long>(i) * a.ld_out + d] : 0.0f;
    }
    float acc[kRowsPerWarp][kLaneCols], row_lse[kRowsPerWarp], row_delta[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
        const int i = i0 + warp * kRowsPerWarp + r;
        row_lse[r] = i < a.T ? lse[i] : 0.0f;
        row_delta[r] = i < a.T ? delta[i] : 0.0f;
#pragma unroll
        for (int c = 0; c < kLaneCols; ++c) acc[r][c] = 0.0f;
    }
    const int last_key = min(i0 + kOwnRows, a.T) - 1;
    for (int j0 = 0; j0 <= last_key; j0 += kTile) {
        __syncthreads();
        for (int idx = threadIdx.x; idx < kTile * D; idx += blockDim.x) {
            const int j = idx / D, d = idx % D, key = j0 + j;
            const bool in = key <= last_key;
            ks[j * dp + d] = in ? k[static_cast<long long>(key) * a.ld_qkv + d] : 0.0f;
            vs[j * dp + d] = in ? v[static_cast<long long>(key) * a.ld_qkv + d] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
            const int own = warp * kRowsPerWarp + r, i = i0 + own;
            if (i >= a.T || j0 > i) continue;
            const bool visible = j0 + lane <= i;
            const float s = dot(qs + own * D, ks + lane * dp, D) * a.scale;
            const float p = visible ? expf(s - row_lse[r]) : 0.0f;
            float dpv = dot(dos + own * D, vs + lane * dp, D);
            if (dropout && visible)  // dP = Z o (dO V^T)
                dpv *= ops::attention_keep(key, mask_row(a.first_sample + n, a.heads, h, a.T, i), j0 + lane, a.rate,
                                           a.keep_scale);
            const float ds = p * (dpv - row_delta[r]);
            const int count = min(kTile, i - j0 + 1);
            for (int j = 0; j < count; ++j) {
                const float dsj = __shfl_sync(0xffffffffu, ds, j);
#pragma unroll
                for (int c = 0; c < kLaneCols; ++c) {
                    const int d = lane + c * kWarpSize;
                    if (d < D) acc[r][c] = fmaf(dsj, ks[j * dp + d], acc[r][c]);
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
        const int i = i0 + warp * kRowsPerWarp + r;
        if (i >= a.T) continue;
        float* dq = a.dqkv + (first_row + i) * a.ld_dqkv + h * D;
#pragma unroll
        for (int c = 0; c < kLaneCols; ++c) {
            const int d = lane + c * kWarpSize;
            if (d < D) dq[d] = acc[r][c] * a.scale;
        }
    }
}

// dK and dV for a tile of key rows: over the queries i >= j,
// dv_j = sum_i P_ij dout_i and dk_j = scale * sum_i dS_ij q_i.
__global__ void __launch_bounds__(kWarps * kWarpSize) attention_dkv_kernel(BackwardArgs a) {
    extern __shared__ float smem[];
    const int D = a.D, dp = padded(D), C = a.heads * D;
    float* ks = smem;
    float* vs = ks + kOwnRows * D;
    float* qs = vs + kOwnRows * D;
    float* dos = qs + kTile * dp;
    float* lse_s = dos + kTile * dp;
    float* delta_s = lse_s + kTile;
    const int n = blockIdx.z, h = blockIdx.y, j0 = blockIdx.x * kOwnRows;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const long long first_row = static_cast<long long>(n) * a.T;
    const float* q = a.qkv + first_row * a.ld_qkv + h * D;
    const float* k = q + C;
    const float* v = q + 2 * C;
    const float* dout = a.dout + first_row * a.ld_out + h * D;
    const float* lse = a.lse + (static_cast<long long>(n) * a.heads + h) * a.T;
    const float* delta = a.delta + (static_cast<long long>(n) * a.heads + h) * a.T;
    const bool dropout = a.dropout_key != nullptr;
    const uint64_t key = dropout ? math::join_key_words(a.dropout_key) : 0;

    for (int idx = threadIdx.x; idx < kOwnRows * D; idx += blockDim.x) {
        const int r = idx / D, d = idx % D, j = j0 + r;
        const bool in = j < a.T;
        ks[idx] = in ? k[static_cast<long long>(j) * a.ld_qkv + d] : 0.0f;
        vs[idx] = in ? v[static_cast<long long>(j) * a.ld_qkv + d] : 0.0f;
    }
    float dk[kRowsPerWarp][kLaneCols], dv[kRowsPerWarp][kLaneCols];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
        for (int c = 0; c < kLaneCols; ++c) dk[r][c] = dv[r][c] = 0.0f;
    // The queries that see any of these keys: j0 .. T - 1.
    for (int qi0 = j0; qi0 < a.T; qi0 += kTile) {
        __syncthreads();
        for (int idx = threadIdx.x; idx < kTile * D; idx += blockDim.x) {
            const int i = idx / D, d = idx % D, query = qi0 + i;
            const bool in = query < a.T;
            qs[i * dp + d] = in ? q[static_cast<long long>(query) * a.ld_qkv + d] : 0.0f;
            dos[i * dp + d] = in ? dout[static_cast<long long>(query) * a.ld_out + d] : 0.0f;
        }
        if (threadIdx.x < kTile) {
            const int query = qi0 + threadIdx.x;
            lse_s[threadIdx.x] = query < a.T ? lse[query] : 0.0f;
            delta_s[threadIdx.x] = query < a.T ? delta[query] : 0.0f;
        }
        __syncthreads();
        const int count = min(kTile, a.T - qi0);
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
            const int own = warp * kRowsPerWarp + r, j = j0 + own;
            if (j >= a.T) continue;
            const int query = qi0 + lane;
            const bool visible = query < a.T && query >= j;
            const float s = dot(qs + lane * dp, ks + own * D, D) * a.scale;
            const float p = visible ? expf(s - lse_s[lane]) : 0.0f;
            const float dpv = dot(dos + lane * dp, vs + own * D, D);
            // With dropout: dS = P o (Z o dP - delta), and dV takes Z o P.
            const float z = dropout && visible ? ops::attention_keep(key, mask_row(a.first_sample + n, a.heads, h, a.T,
                                                                                   query),
                                                                     j, a.rate, a.keep_scale)
                                               : 1.0f;
            const float ds = p * (z * dpv - delta_s[lane]);
            const float pd = p * z;
            for (int i = 0; i < count; ++i) {
                const float pi = __shfl_sync(0xffffffffu, pd, i);
                const float dsi = __shfl_sync(0xffffffffu, ds, i);
#pragma unroll
                for (int c = 0; c < kLaneCols; ++c) {
                    const int d = lane + c * kWarpSize;
                    if (d < D) {
                        dv[r][c] = fmaf(pi, dos[i * dp + d], dv[r][c]);
                        dk[r][c] = fmaf(dsi, qs[i * dp + d], dk[r][c]);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
        const int j = j0 + warp * kRowsPerWarp + r;
        if (j >= a.T) continue;
        float* row = a.dqkv + (first_row + j) * a.ld_dqkv + h * D;
#pragma unroll
        for (int c = 0; c < kLaneCols; ++c) {
            const int d = lane + c * kWarpSize;
            if (d < D) {
                row[C + d] = dk[r][c] * a.scale;
                row[2 * C + d] = dv[r][c];
            }
        }
    }
}

// Row `position` of each sample's caches = the new key and value.
__global__ void attention_cache_kernel(const float* qkv, int ld_qkv, float* k_cache, float* v_cache,
                                       long long cache_stride, int position, int C, size_t n) {
    for (size_t idx = thread_index(); idx < n; idx += thread_count()) {
        const long long s = static_cast<long long>(idx / C);
        const int c = static_cast<int>(idx % C);
        const long long at = s * cache_stride + static_cast<long long>(position) * C + c;
        k_cache[at] = qkv[s * ld_qkv + C + c];
        v_cache[at] = qkv[s * ld_qkv + 2 * C + c];
    }
}

// RoPE on the queries and keys (ops::AttentionRotary): one thread a pair
// (sample row, query or key, head, i < D/2), its angle formed in double as
// the CPU forms it.
__global__ void attention_rotary_kernel(float* qkv, int ld, int T, int heads, int D, long long first_position,
                                        bool inverse, size_t n) {
    const int half = D / 2;
    for (size_t idx = thread_index(); idx < n; idx += thread_count()) {
        const int i = static_cast<int>(idx % half);
        const size_t rest = idx / half;
        const int part = static_cast<int>(rest % (2 * heads));  // head, of the queries then of the keys
        const size_t row = rest / (2 * heads);
        const int t = static_cast<int>(row % T);
        float c, s;
        ops::rotary_cos_sin(first_position + t, i, D, &c, &s);
        if (inverse) s = -s;
        float* x = qkv + row * ld + static_cast<size_t>(part) * D;
        const float a = x[i], b = x[i + half];
        x[i] = a * c - b * s;
        x[i + half] = b * c + a * s;
    }
}

cudaStream_t stream_of(Backend& backend) {
    return static_cast<cudaStream_t>(static_cast<CudaBackend&>(backend).stream_handle());
}
int device_of(Backend& backend) { return static_cast<CudaBackend&>(backend).device(); }

float scale_of(int d) { return 1.0f / sqrtf(static_cast<float>(d)); }

// Dropout's fields of ForwardArgs or BackwardArgs: none without a key or with rate 0.
template <class Args>
void set_dropout(Args& a, const uint32_t* key, float rate, int64_t first_sample) {
    if (key == nullptr || !(rate > 0.0f)) return;
    a.dropout_key = key;
    a.rate = rate;
    a.keep_scale = 1.0f / (1.0f - rate);
    a.first_sample = static_cast<long long>(first_sample);
}

void require_head_size(Backend& b, const char* op, int d) {
    if (d < 1 || d > kMaxHeadSize)
        throw Error(b.name() + ": " + op + ": head size " + std::to_string(d) + " is outside 1.." +
                    std::to_string(kMaxHeadSize) + " (the CUDA kernels' limit); use more heads");
}

dim3 grid_for(Backend& b, int own_rows, int heads, int rows) {
    if (rows > 65535 || heads > 65535)
        throw Error(b.name() + ": attention: " + std::to_string(rows) + " samples of " + std::to_string(heads) +
                    " heads; the kernels take at most 65535 of each");
    return dim3(static_cast<unsigned>((own_rows + kOwnRows - 1) / kOwnRows), static_cast<unsigned>(heads),
                static_cast<unsigned>(rows));
}

void launch_forward(Backend& b, const ForwardArgs& a, int rows) {
    attention_forward_kernel<<<grid_for(b, a.queries, a.heads, rows), kWarps * kWarpSize, forward_shared_bytes(a.D),
                               stream_of(b)>>>(a);
    CUDA_CHECK(device_of(b), cudaGetLastError());
}

void attention_forward(Backend& b, const ops::AttentionForward& op) {
    if (op.rows <= 0 || op.T <= 0 || op.heads <= 0) return;
    require_head_size(b, "attention_forward", op.D);
    const int C = op.heads * op.D;
    const long long t = op.T;
    ForwardArgs a{op.qkv,     t * op.ld_qkv, op.ld_qkv, op.qkv + C,   op.qkv + 2 * C, t * op.ld_qkv, op.ld_qkv,
                  op.out,     t * op.ld_out, op.ld_out, op.lse,       op.heads,       op.D,          op.T,
                  0,          scale_of(op.D), nullptr,   0.0f,         1.0f,           0};
    set_dropout(a, op.dropout_key, op.dropout_rate, op.first_sample);
    launch_forward(b, a, op.rows);
}

void attention_backward(Backend& b, const ops::AttentionBackward& op) {
    if (op.rows <= 0 || op.T <= 0 || op.heads <= 0) return;
    require_head_size(b, "attention_backward", op.D);
    BackwardArgs a{op.qkv,  op.ld_qkv,  op.out,  op.dout, op.ld_out, op.lse, op.delta,
                   op.dqkv, op.ld_dqkv, op.rows, op.T,    op.heads,  op.D,   scale_of(op.D),
                   nullptr, 0.0f,       1.0f,    0};
    set_dropout(a, op.dropout_key, op.dropout_rate, op.first_sample);
    cudaStream_t s = stream_of(b);
    const size_t items = elements(op.rows, op.heads, op.T);
    attention_delta_kernel<<<blocks_for(items, kWarpsPerBlock), kBlockThreads, 0, s>>>(a);
    CUDA_CHECK(device_of(b), cudaGetLastError());
    const dim3 grid = grid_for(b, op.T, op.heads, op.rows);
    attention_dq_kernel<<<grid, kWarps * kWarpSize, backward_shared_bytes(op.D), s>>>(a);
    CUDA_CHECK(device_of(b), cudaGetLastError());
    attention_dkv_kernel<<<grid, kWarps * kWarpSize, backward_shared_bytes(op.D), s>>>(a);
    CUDA_CHECK(device_of(b), cudaGetLastError());
}

void attention_decode(Backend& b, const ops::AttentionDecode& op) {
    if (op.rows <= 0 || op.heads <= 0) return;
    require_head_size(b, "attention_decode", op.D);
    const int C = op.heads * op.D;
    const size_t n = elements(op.rows, C);
    CUDA_CHECK(device_of(b), launch_1d(stream_of(b), n, attention_cache_kernel, op.qkv, op.ld_qkv, op.k_cache,
                                       op.v_cache, static_cast<long long>(op.cache_stride), op.position, C, n));
    ForwardArgs a{op.qkv,  op.ld_qkv, 0,         op.k_cache, op.v_cache, op.cache_stride, C,
                  op.out,  op.ld_out, op.ld_out, nullptr,    op.heads,   op.D,            1,
                  op.position, scale_of(op.D), nullptr, 0.0f, 1.0f, 0};
    launch_forward(b, a, op.rows);
}

void attention_rotary(Backend& b, const ops::AttentionRotary& op) {
    if (op.rows <= 0 || op.T <= 0 || op.heads <= 0 || op.D < 2) return;
    const size_t n = elements(op.rows, op.T, 2 * op.heads, op.D / 2);
    CUDA_CHECK(device_of(b), launch_1d(stream_of(b), n, attention_rotary_kernel, op.qkv, op.ld, op.T, op.heads, op.D,
                                       static_cast<long long>(op.first_position), op.inverse, n));
}

}  // namespace

void add_attention(KernelTable& table) {
    table.add<ops::AttentionForward, &attention_forward>();
    table.add<ops::AttentionBackward, &attention_backward>();
    table.add<ops::AttentionDecode, &attention_decode>();
    table.add<ops::AttentionRotary, &attention_rotary>();
}

}  // namespace gputrain::cuda_kernels
