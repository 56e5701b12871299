#include "backend/cpu/cpu_features.hpp"

namespace gputrain::cpu {

bool has_avx2_fma() {
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return has;
}

}  // namespace gputrain::cpu
