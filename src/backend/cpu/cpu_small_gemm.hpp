// small_gemm: C = alpha * op(A) * B + beta * C (row-major, B not transposed)
// with a register-tile kernel (AVX2+FMA, or AVX-512 where the CPU has it: the
// same operations per element, wider tiles) and no packing. On the shapes of a
// small-batch MLP step (32 x 784 x 128 forward, the weight gradient
// 784 x 128 from 32 rows) OpenBLAS spends much of its time packing and
// dispatching; this kernel reads A and B in place (see docs/architecture.md,
// "CPU fast path", for the measurements that chose where it is used).
#pragma once

namespace gputrain::cpu {

// The sum over k runs in blocks of this many terms (a block of B then stays in cache).
constexpr int kSmallGemmBlockK = 256;

// Whether CpuBackend::gemm hands this call to small_gemm: AVX2+FMA present
// and a shape where the kernels measured faster than OpenBLAS.
bool small_gemm_pays(bool trans_a, bool trans_b, int m, int n, int k);

// op(A) is m x k: A stored m x k (lda >= k), or k x m when trans_a (lda >= m).
// B is k x n (ldb >= n), C is m x n (ldc >= n). beta == 0 never reads C.
// Needs AVX2+FMA (has_avx2_fma()); m, n, k >= 1. Each element's sum runs over
// k in order, one fused multiply-add per term, in blocks of kSmallGemmBlockK
// terms; each block's sum, times alpha, is added to C (the first block to
// beta * C). The tests replay this order bit for bit.
void small_gemm(bool trans_a, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                float beta, float* c, int ldc);

}  // namespace gputrain::cpu
