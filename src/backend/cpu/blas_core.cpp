#include "backend/cpu/blas_core.hpp"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>

namespace gputrain::cpu {

VectorUnits vector_units() {
    VectorUnits u;
    u.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    u.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512cd");
    u.avx512_bf16 = u.avx512 && __builtin_cpu_supports("avx512bf16");
    return u;
}

std::string better_blas_core(const std::string& chosen, const VectorUnits& units) {
    // The cores OpenBLAS falls back to for a CPU it does not know: none has AVX2.
    static const char* const fallbacks[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Sandybridge"};
    bool fell_back = false;
    for (const char* name : fallbacks) fell_back = fell_back || chosen == name;
    if (!fell_back) return "";
    if (units.avx512_bf16) return "Cooperlake";
    if (units.avx512) return "SkylakeX";
    if (units.avx2_fma) return "Haswell";
    return "";
}

void exec_with_better_blas_core(char** argv) {
    if (std::getenv("OPENBLAS_CORETYPE")) return;  // the user's, or set by the exec below
    const char* chosen = openblas_get_corename();
    const std::string core = better_blas_core(chosen ? chosen : "", vector_units());
    if (core.empty()) return;
    if (::setenv("OPENBLAS_CORETYPE", core.c_str(), 1) != 0) return;
    ::execv("/proc/self/exe", argv);
    ::unsetenv("OPENBLAS_CORETYPE");  // the exec failed: go on with OpenBLAS's choice
}

}  // namespace gputrain::cpu
