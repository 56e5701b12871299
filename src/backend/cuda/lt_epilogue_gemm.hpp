// LtEpilogueGemm: a dense layer's GEMMs with the bias add, the activation or
// the bias gradient done in cuBLASLt's epilogue, so that one kernel does what
// a GEMM and an element-wise or reduction pass did (training.gemm_epilogues):
//   forward:  y = a(x W + b), a linear or relu     (CUBLASLT_EPILOGUE_BIAS, RELU, RELU_BIAS)
//   backward: dW = x^T dz, db = column sums of dz   (CUBLASLT_EPILOGUE_BGRADA, fp32 only)
// Matrices are row-major and fp32, as Backend::gemm's; the compute type
// follows the precision (fp32, TF32, or bf16/fp16 rounding inside the GEMM).
//
// Each shape gets a plan once: descriptors and the algorithm cuBLASLt's
// heuristic ranks first for the operands' alignment. Where cuBLASLt has no
// algorithm (an epilogue it does not offer for this type or layout), the plan
// says so and the calls return false without queueing anything: the caller
// runs the plain GEMM and its element-wise kernel instead.
//
// Not thread-safe (one per backend, used by its replica's thread).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <map>
#include <memory>

#include "backend/activation.hpp"
#include "backend/precision.hpp"

namespace gputrain {

class LtEpilogueGemm {
public:
    // Creates the cuBLASLt handle. `workspace` (device memory, `workspace_bytes`
    // long) is shared with the backend's other GEMMs, which run on the same stream.
    LtEpilogueGemm(int device, cudaStream_t stream, void* workspace, size_t workspace_bytes);
    ~LtEpilogueGemm();
    LtEpilogueGemm(const LtEpilogueGemm&) = delete;
    LtEpilogueGemm& operator=(const LtEpilogueGemm&) = delete;

    // y[m,n] = a(x[m,k] w[k,n] + bias[n]); bias may be null for relu. False
    // (nothing queued) for other activations or where cuBLASLt has no kernel.
    bool forward(Precision precision, Activation a, int m, int n, int k, const float* x, const float* w,
                 const float* bias, float* y);
    // dw[k,n] = x[m,k]^T dz[m,n] and db[n] = sum over rows of dz; false as
    // above, and under any precision but fp32.
    bool weight_bias_grad(Precision precision, int m, int n, int k, const float* x, const float* dz, float* dw,
                          float* db);

    // Plans made so far and how many of them cuBLASLt had a kernel for.
    size_t plans() const { return plans_.size(); }
    size_t usable_plans() const;

private:
    struct Plan;
    // epilogue, compute type, m, n, k, and the alignment in bytes of A, B, D and the bias
    using Key = std::array<int, 9>;

    // The plan for this call: made on first use, with the heuristic's pick.
    Plan& plan_for(const Key& key, cublasOperation_t trans_b, int a_rows, int a_cols, int b_rows, int b_cols,
                   int d_rows, int d_cols, const void* bias);
    // Runs a usable plan; false when cuBLASLt refuses it at run time (the plan
    // is then marked unusable).
    bool run(Plan& plan, const void* bias, const float* a, const float* b, float* d);

    int device_;
    cudaStream_t stream_;
    void* workspace_;
    size_t workspace_bytes_;
    cublasLtHandle_t handle_ = nullptr;
    std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace gputrain
