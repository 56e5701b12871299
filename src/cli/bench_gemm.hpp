// The GEMMs a model's dense layers make in one training step, and the rate
// the backend reaches on each shape alone: `gputrain bench` compares the
// training step against it (same library, same process, same run).
#pragma once

#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "nn/model.hpp"

namespace gputrain::cli {

struct GemmShape {
    size_t layer = 0;          // index in the model
    std::string pass;          // "forward", "weight grad", "input grad"
    bool trans_a = false, trans_b = false;
    int m = 0, n = 0, k = 0;
    double flops() const { return 2.0 * m * n * k; }
    bool same_call(const GemmShape& o) const {
        return trans_a == o.trans_a && trans_b == o.trans_b && m == o.m && n == o.n && k == o.k;
    }
};

// Dense layers' GEMMs for `rows` samples, in the calls Dense makes: forward
// (x * W), weight gradient (x^T * dz) and input gradient (dz * W^T; the model
// skips it only for layer 0).
std::vector<GemmShape> dense_gemms(const nn::Model& model, int rows);

// What a bare GEMM is timed as. library_alone: the library's GEMM on its
// own; where the backend multiplies 16-bit copies (Backend::gemm_copy_bytes),
// on copies made once beforehand, so no cast is timed. with_casts: gemm() as
// a caller without copies makes it, casting its fp32 operands every call.
enum class BareGemm { library_alone, with_casts };

// GFLOP/s of one GEMM on each shape (equal shapes measured once), on random
// operands: repeated until at least `min_seconds`, median of the calls after
// the first when there are several. Reserves the GEMM scratch the shapes need
// under the backend's current settings. Call on the backend's thread.
std::vector<double> bare_gemm_rates(Backend& backend, const std::vector<GemmShape>& shapes, double min_seconds,
                                    BareGemm kind = BareGemm::library_alone);

}  // namespace gputrain::cli
