// What the CPU we run on can do, asked once: kernels compiled for AVX2+FMA
// next to their baseline versions pick one at run time with this (explicit
// dispatch, not target_clones: an ifunc resolver runs before the sanitizers'
// runtimes start).
#pragma once

namespace gputrain::cpu {

bool has_avx2_fma();
// AVX-512 F, VL, DQ and BW (Skylake-SP and later), with AVX2 and FMA.
bool has_avx512();

}  // namespace gputrain::cpu
