// CpuBackend::all_finite: an exponent-bits test over the raw words, which the
// compiler vectorizes (a float loop with isfinite would not be, and -ffast-math
// would fold it away).
#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_backend.hpp"

namespace gputrain {

bool CpuBackend::all_finite(const float* x, size_t n) {
    constexpr uint32_t kExponent = 0x7f800000u;  // all ones: Inf or NaN
    size_t i = 0;
    constexpr size_t kChunk = 1024;
    while (i < n) {
        const size_t end = i + kChunk < n ? i + kChunk : n;
        uint32_t bad = 0;
        for (size_t j = i; j < end; ++j) {
            uint32_t bits;
            std::memcpy(&bits, x + j, sizeof bits);
            bad |= static_cast<uint32_t>((bits & kExponent) == kExponent);
        }
        if (bad) return false;
        i = end;
    }
    return true;
}

}  // namespace gputrain
