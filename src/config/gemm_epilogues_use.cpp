#include "config/gemm_epilogues_use.hpp"

namespace gputrain::config {

std::string gemm_epilogues_unused_reason(const RunConfig& cfg) {
    const TrainingConfig& t = cfg.training;
    if (!t.gemm_epilogues || !t.cast_gemm_inputs || (t.precision != Precision::bf16 && t.precision != Precision::fp16))
        return "";
    return "GEMM epilogues: not used: under training.precision " + std::string(name_of(t.precision)) +
           " with training.cast_gemm_inputs: true (the default) each GEMM multiplies 16-bit copies of its inputs, "
           "which take the plain path; set training.cast_gemm_inputs: false to use the epilogues";
}

}  // namespace gputrain::config
