// Precision: what the matrix products of a training step compute in
// (`training.precision`). Parameters, gradients, optimizer state and every
// element-wise pass stay fp32 ("fp32 master weights"); only the GEMMs change:
//   fp32  plain IEEE fp32 (the default; what the CPU always does)
//   tf32  fp32 data through TF32 tensor cores (10-bit mantissa products)
//   bf16  fp32 data rounded to bfloat16 inside the GEMM (or, with
//         training.cast_gemm_inputs, into 16-bit copies first), fp32 accumulation
//   fp16  the same with IEEE half, plus dynamic loss scaling (train/loss_scaler)
#pragma once

namespace gputrain {

enum class Precision { fp32, tf32, bf16, fp16 };

}  // namespace gputrain
