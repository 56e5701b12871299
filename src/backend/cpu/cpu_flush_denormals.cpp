// CpuBackend::bind_thread: denormal floats flushed to zero on the replica's
// thread (the MXCSR FTZ and DAZ bits, as TensorFlow sets them for its ops).
// Adam's first moments of rarely lit pixels decay through the denormal range,
// where every multiply costs a microcode assist (see docs/architecture.md, "CPU
// fast path"). Values that small move no weight: the step they feed,
// alpha * m / (sqrt(v) + eps), is far below a weight's rounding unit.
#include "backend/cpu/cpu_backend.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace gputrain {

#if defined(__x86_64__) || defined(__i386__)
namespace {
constexpr unsigned kFlushToZero = 0x8000;      // MXCSR bit 15: denormal results become 0
constexpr unsigned kDenormalsAreZero = 0x0040;  // MXCSR bit 6: denormal inputs read as 0
}  // namespace
void flush_denormals_on_this_thread() { _mm_setcsr(_mm_getcsr() | kFlushToZero | kDenormalsAreZero); }
#else
void flush_denormals_on_this_thread() {}
#endif

void CpuBackend::bind_thread() { flush_denormals_on_this_thread(); }

}  // namespace gputrain
