// better_blas_core: which OpenBLAS kernels to ask for when OpenBLAS fell back
// to an old core; and, end to end, that the binary runs with them.
#include <catch2/catch.hpp>

#include "backend/cpu/blas_core.hpp"

using namespace gputrain::cpu;

TEST_CASE("OpenBLAS's fallback to an old core is replaced by the newest kernels the CPU can run") {
    const VectorUnits none, avx2{true, false, false}, skx{true, true, false}, cooper{true, true, true};
    CHECK(better_blas_core("Prescott", cooper) == "Cooperlake");
    CHECK(better_blas_core("Prescott", skx) == "SkylakeX");
    CHECK(better_blas_core("Nehalem", avx2) == "Haswell");
    CHECK(better_blas_core("Sandybridge", avx2) == "Haswell");
    // A CPU without AVX2 keeps the fallback; a core OpenBLAS knew stays.
    CHECK(better_blas_core("Prescott", none).empty());
    CHECK(better_blas_core("SkylakeX", cooper).empty());
    CHECK(better_blas_core("Haswell", cooper).empty());
    CHECK(better_blas_core("Zen", cooper).empty());
    CHECK(better_blas_core("", cooper).empty());
}
