// Whether training.gemm_epilogues can take effect with the rest of a config.
#pragma once

#include <string>

#include "config/run_config.hpp"

namespace gputrain::config {

// Why training.gemm_epilogues does nothing with these settings: under bf16 or
// fp16 with training.cast_gemm_inputs (its default) each GEMM multiplies
// 16-bit copies of its inputs, and those take the plain path. A line to log,
// naming the keys and what to set; "" when the epilogues can take effect (or
// are off).
std::string gemm_epilogues_unused_reason(const RunConfig& cfg);

}  // namespace gputrain::config
