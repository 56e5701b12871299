// The 16-bit input copies of a GEMM under training.cast_gemm_inputs: how much
// scratch they take and where each lies in it. Plain arithmetic, shared by the
// CUDA backend (which makes the copies) and the memory estimate.
#pragma once

#include <cstddef>

namespace gputrain {

// The copies start on this boundary (cuBLAS's tensor-core kernels want at
// least 16-byte aligned operands; cudaMalloc gives 256).
constexpr size_t kCastCopyAlignBytes = 256;

inline size_t round_up_cast_copy(size_t bytes) {
    return (bytes + kCastCopyAlignBytes - 1) / kCastCopyAlignBytes * kCastCopyAlignBytes;
}

// Elements from a row-major matrix's first element to its last: `rows` rows
// of `cols` used columns, `ld` apart. The copy keeps the layout (and ld).
inline size_t matrix_span(int rows, int cols, int ld) {
    if (rows <= 0 || cols <= 0) return 0;
    return static_cast<size_t>(rows - 1) * static_cast<size_t>(ld) + static_cast<size_t>(cols);
}

struct CastCopyLayout {
    size_t a_elements = 0, b_elements = 0;  // what is copied of A and of B
    size_t b_offset_bytes = 0;              // where B's copy starts (A's starts at 0)
    size_t total_bytes = 0;                 // 0: the GEMM multiplies nothing
};

// For C = op(A) op(B) with op(A) m x k and op(B) k x n (Backend::gemm's
// arguments), copies of `element_bytes` bytes per element.
inline CastCopyLayout cast_copy_layout(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb,
                                       size_t element_bytes = 2) {
    CastCopyLayout l;
    if (m <= 0 || n <= 0 || k <= 0) return l;
    l.a_elements = trans_a ? matrix_span(k, m, lda) : matrix_span(m, k, lda);
    l.b_elements = trans_b ? matrix_span(n, k, ldb) : matrix_span(k, n, ldb);
    l.b_offset_bytes = round_up_cast_copy(l.a_elements * element_bytes);
    l.total_bytes = l.b_offset_bytes + round_up_cast_copy(l.b_elements * element_bytes);
    return l;
}

}  // namespace gputrain
