#include "backend/cpu/cpu_small_gemm.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/cpu/cpu_features.hpp"

// Only these functions use AVX2+FMA (AVX-512: GPUTRAIN_AVX512); callers check
// has_avx2_fma() (has_avx512()) first.
#define GPUTRAIN_AVX2 __attribute__((target("avx2,fma")))
#define GPUTRAIN_AVX512 __attribute__((target("avx2,fma,avx512f,avx512vl,avx512dq,avx512bw")))

namespace gputrain::cpu {

namespace {

// A tile of C is up to 6 rows x 16 columns: 12 accumulator registers, two for
// the row of B, one for the broadcast element of A (16 ymm registers in all).
constexpr int kTileRows = 6;
constexpr int kTileCols = 16;

// Lanes [0, count) all ones, the rest zero, for count in [0, 8].
alignas(32) constexpr int32_t kLaneMasks[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
GPUTRAIN_AVX2 inline __m256i first_lanes(int count) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLaneMasks + 8 - count));
}

// C[0..Rows, 0..cols) = alpha * sum over p < k of op(A)[r, p] * B[p, :] + beta * C.
// Full: cols == 16, plain loads; otherwise masked loads and stores (a masked-off
// lane is never touched, so reading past the matrix cannot fault).
template <int Rows, bool TransA, bool Full>
GPUTRAIN_AVX2 void tile(int k, const float* a, int lda, const float* b, int ldb, float alpha, float beta, float* c,
                        int ldc, int cols) {
    __m256 acc0[Rows], acc1[Rows];
#pragma GCC unroll 6
    for (int r = 0; r < Rows; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
    __m256i mask0 = _mm256_set1_epi32(-1), mask1 = mask0;
    if (!Full) {
        mask0 = first_lanes(std::min(cols, 8));
        mask1 = first_lanes(std::max(cols - 8, 0));
    }
    for (int p = 0; p < k; ++p) {
        const float* bp = b + static_cast<size_t>(p) * ldb;
        const __m256 b0 = Full ? _mm256_loadu_ps(bp) : _mm256_maskload_ps(bp, mask0);
        const __m256 b1 = Full ? _mm256_loadu_ps(bp + 8) : _mm256_maskload_ps(bp + 8, mask1);
#pragma GCC unroll 6
        for (int r = 0; r < Rows; ++r) {
            const float* ap = TransA ? a + static_cast<size_t>(p) * lda + r : a + static_cast<size_t>(r) * lda + p;
            const __m256 av = _mm256_broadcast_ss(ap);
            acc0[r] = _mm256_fmadd_ps(av, b0, acc0[r]);
            acc1[r] = _mm256_fmadd_ps(av, b1, acc1[r]);
        }
    }
    const __m256 alpha_v = _mm256_set1_ps(alpha), beta_v = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int r = 0; r < Rows; ++r) {
        float* cr = c + static_cast<size_t>(r) * ldc;
        __m256 v0 = acc0[r], v1 = acc1[r];
        if (alpha != 1.0f) {
            v0 = _mm256_mul_ps(v0, alpha_v);
            v1 = _mm256_mul_ps(v1, alpha_v);
        }
        if (beta != 0.0f) {
            const __m256 old0 = Full ? _mm256_loadu_ps(cr) : _mm256_maskload_ps(cr, mask0);
            const __m256 old1 = Full ? _mm256_loadu_ps(cr + 8) : _mm256_maskload_ps(cr + 8, mask1);
            v0 = _mm256_fmadd_ps(beta_v, old0, v0);
            v1 = _mm256_fmadd_ps(beta_v, old1, v1);
        }
        if (Full) {
            _mm256_storeu_ps(cr, v0);
            _mm256_storeu_ps(cr + 8, v1);
        } else {
            _mm256_maskstore_ps(cr, mask0, v0);
            _mm256_maskstore_ps(cr + 8, mask1, v1);
        }
    }
}

// The same tile on AVX-512: up to 8 rows x 32 columns (16 accumulators of 16
// lanes). Each element of C gets exactly the operations of the AVX2 tile (its
// sum over p in order, one fused multiply-add per term, then alpha and beta),
// so both give the same bits.
constexpr int kTileRows512 = 8;
constexpr int kTileCols512 = 32;

GPUTRAIN_AVX512 inline __mmask16 lanes512(int count) {
    return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << std::max(count, 0)) - 1u);
}

template <int Rows, bool TransA, bool Full>
GPUTRAIN_AVX512 void tile512(int k, const float* a, int lda, const float* b, int ldb, float alpha, float beta,
                             float* c, int ldc, int cols) {
    __m512 acc0[Rows], acc1[Rows];
#pragma GCC unroll 8
    for (int r = 0; r < Rows; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
    const __mmask16 mask0 = Full ? static_cast<__mmask16>(0xFFFF) : lanes512(cols);
    const __mmask16 mask1 = Full ? static_cast<__mmask16>(0xFFFF) : lanes512(cols - 16);
    for (int p = 0; p < k; ++p) {
        const float* bp = b + static_cast<size_t>(p) * ldb;
        const __m512 b0 = Full ? _mm512_loadu_ps(bp) : _mm512_maskz_loadu_ps(mask0, bp);
        const __m512 b1 = Full ? _mm512_loadu_ps(bp + 16) : _mm512_maskz_loadu_ps(mask1, bp + 16);
#pragma GCC unroll 8
        for (int r = 0; r < Rows; ++r) {
            const float* ap = TransA ? a + static_cast<size_t>(p) * lda + r : a + static_cast<size_t>(r) * lda + p;
            const __m512 av = _mm512_set1_ps(*ap);
            acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
            acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
        }
    }
    const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
#pragma GCC unroll 8
    for (int r = 0; r < Rows; ++r) {
        float* cr = c + static_cast<size_t>(r) * ldc;
        __m512 v0 = acc0[r], v1 = acc1[r];
        if (alpha != 1.0f) {
            v0 = _mm512_mul_ps(v0, alpha_v);
            v1 = _mm512_mul_ps(v1, alpha_v);
        }
        if (beta != 0.0f) {
            const __m512 old0 = Full ? _mm512_loadu_ps(cr) : _mm512_maskz_loadu_ps(mask0, cr);
            const __m512 old1 = Full ? _mm512_loadu_ps(cr + 16) : _mm512_maskz_loadu_ps(mask1, cr + 16);
            v0 = _mm512_fmadd_ps(beta_v, old0, v0);
            v1 = _mm512_fmadd_ps(beta_v, old1, v1);
        }
        if (Full) {
            _mm512_storeu_ps(cr, v0);
            _mm512_storeu_ps(cr + 16, v1);
        } else {
            _mm512_mask_storeu_ps(cr, mask0, v0);
            _mm512_mask_storeu_ps(cr + 16, mask1, v1);
        }
    }
}

using TileFn = void (*)(int, const float*, int, const float*, int, float, float, float*, int, int);

template <bool TransA, bool Full>
constexpr TileFn tiles512_by_rows[kTileRows512 + 1] = {nullptr,
                                                       tile512<1, TransA, Full>,
                                                       tile512<2, TransA, Full>,
                                                       tile512<3, TransA, Full>,
                                                       tile512<4, TransA, Full>,
                                                       tile512<5, TransA, Full>,
                                                       tile512<6, TransA, Full>,
                                                       tile512<7, TransA, Full>,
                                                       tile512<8, TransA, Full>};

TileFn pick_tile512(bool trans_a, bool full, int rows) {
    if (trans_a) return full ? tiles512_by_rows<true, true>[rows] : tiles512_by_rows<true, false>[rows];
    return full ? tiles512_by_rows<false, true>[rows] : tiles512_by_rows<false, false>[rows];
}

template <bool TransA, bool Full>
constexpr TileFn tiles_by_rows[kTileRows + 1] = {nullptr,
                                                 tile<1, TransA, Full>,
                                                 tile<2, TransA, Full>,
                                                 tile<3, TransA, Full>,
                                                 tile<4, TransA, Full>,
                                                 tile<5, TransA, Full>,
                                                 tile<6, TransA, Full>};

TileFn pick_tile(bool trans_a, bool full, int rows) {
    if (trans_a) return full ? tiles_by_rows<true, true>[rows] : tiles_by_rows<true, false>[rows];
    return full ? tiles_by_rows<false, true>[rows] : tiles_by_rows<false, false>[rows];
}

}  // namespace

bool small_gemm_pays(bool trans_a, bool trans_b, int m, int n, int k) {
    (void)trans_a;
    // Measured against OpenBLAS (one thread, best of many runs; docs/benchmarks.md):
    // - B transposed (dx = dy W^T) stays with OpenBLAS: a dot-product kernel
    //   for it measured 0.4-0.8x on the MLP's shapes.
    // - Small k: 1.2-1.8x for 16 <= n <= 288 (the MLP's weight gradient
    //   x^T dz, the CNN's backward-data GEMMs); under 16 columns 0.9x; with n
    //   of 1024 and more, rows of B 4 KiB apart alias in the cache (0.03-0.9x).
    // - Small m: 1.1-1.6x for n <= 128 (the MLP's forward x W, the first conv's
    //   backward-filter GEMM); 0.9x for 64 x 288 with k of 392 and more.
    if (trans_b || !has_avx2_fma()) return false;
    if (k <= 64) return n >= 16 && n <= 288;
    return m <= 64 && k <= 4096 && n <= 128;
}

void small_gemm(bool trans_a, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                float beta, float* c, int ldc) {
    const bool wide = has_avx512();
    const int tile_rows = wide ? kTileRows512 : kTileRows, tile_cols = wide ? kTileCols512 : kTileCols;
    for (int p0 = 0; p0 < k; p0 += kSmallGemmBlockK) {
        const int depth = std::min(kSmallGemmBlockK, k - p0);
        const float block_beta = p0 == 0 ? beta : 1.0f;  // later blocks add to what the first wrote
        const float* a_block = trans_a ? a + static_cast<size_t>(p0) * lda : a + p0;
        const float* b_block = b + static_cast<size_t>(p0) * ldb;
        for (int i = 0; i < m; i += tile_rows) {
            const int rows = std::min(tile_rows, m - i);
            const float* a_tile = trans_a ? a_block + i : a_block + static_cast<size_t>(i) * lda;
            for (int j = 0; j < n; j += tile_cols) {
                const int cols = std::min(tile_cols, n - j);
                const TileFn fn = wide ? pick_tile512(trans_a, cols == tile_cols, rows)
                                       : pick_tile(trans_a, cols == tile_cols, rows);
                fn(depth, a_tile, lda, b_block + j, ldb, alpha, block_beta, c + static_cast<size_t>(i) * ldc + j, ldc,
                   cols);
            }
        }
    }
}

}  // namespace gputrain::cpu
