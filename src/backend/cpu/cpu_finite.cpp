// CpuBackend::all_finite: an exponent-bits test over the raw words, which the
// compiler vectorizes (a float loop with isfinite would not be, and -ffast-math
// would fold it away). Compiled for baseline x86-64 and for AVX2 (twice the
// lanes: it reads every gradient every step), picked at run time.
#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/cpu_features.hpp"

namespace gputrain {

namespace {

inline __attribute__((always_inline)) bool all_finite_loop(const float* x, size_t n) {
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

bool all_finite_baseline(const float* x, size_t n) { return all_finite_loop(x, n); }
__attribute__((target("avx2"))) bool all_finite_avx2(const float* x, size_t n) { return all_finite_loop(x, n); }

}  // namespace

bool CpuBackend::all_finite(const float* x, size_t n) {
    return cpu::has_avx2_fma() ? all_finite_avx2(x, n) : all_finite_baseline(x, n);
}

void CpuBackend::check_finite(const float* x, size_t n, int32_t* guard) { record_finite(guard, all_finite(x, n)); }

void CpuBackend::record_finite(int32_t* guard, bool finite) { math::tally_finite(guard, finite); }

void CpuBackend::scale_by(float* x, size_t n, const float* factor) { scale(x, n, *factor); }

void CpuBackend::loss_scale_update(math::LossScaleState* state, const int32_t* guard, bool sticky) {
    math::loss_scale_update(*state, guard[0] != 0, sticky);
}

}  // namespace gputrain
