// OpenBLAS chooses its kernels for the CPU in its library constructor, before
// main, from the CPU model (or OPENBLAS_CORETYPE). Debian 12's 0.3.21 does not
// know recent Xeons (family 6, model 207) and falls back to Prescott's SSE3
// kernels: on such a 2-core VM W2's GEMMs ran at 28.5 GFLOP/s, and a CNN
// epoch took 2.45 s against 1.28 s with Cooperlake's kernels. The choice can
// only be changed before the library loads, so gputrain sets
// OPENBLAS_CORETYPE and executes itself again, once, when OpenBLAS fell back
// to an old core on a CPU with AVX2 or AVX-512. A user's OPENBLAS_CORETYPE is
// never overridden.
#pragma once

#include <string>

namespace gputrain::cpu {

struct VectorUnits {
    bool avx2_fma = false;
    bool avx512 = false;       // F, BW, VL, DQ, CD: what OpenBLAS's SkylakeX kernels use
    bool avx512_bf16 = false;  // and Cooperlake's
};
VectorUnits vector_units();

// The OPENBLAS_CORETYPE to ask for when OpenBLAS chose the core `chosen`
// ("Prescott") on a CPU with `units`; "" when its choice stands.
std::string better_blas_core(const std::string& chosen, const VectorUnits& units);

// First thing in main: re-executes the program (/proc/self/exe) with
// OPENBLAS_CORETYPE set when better_blas_core says so; returns otherwise (or
// when the exec fails, with OpenBLAS's own choice).
void exec_with_better_blas_core(char** argv);

}  // namespace gputrain::cpu
