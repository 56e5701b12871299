#include "backend/cpu/cpu_features.hpp"

namespace gputrain::cpu {

bool has_avx2_fma() {
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return has;
}

bool has_avx512() {
    static const bool has = has_avx2_fma() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
    return has;
}

}  // namespace gputrain::cpu
