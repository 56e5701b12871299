#include "backend/cuda/lt_epilogue_gemm.hpp"

#include <cstdint>

#include "backend/cuda/cuda_check.hpp"

namespace gputrain {

struct LtEpilogueGemm::Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool usable = false;

    Plan() = default;
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan() {
        if (d) (void)cublasLtMatrixLayoutDestroy(d);
        if (b) (void)cublasLtMatrixLayoutDestroy(b);
        if (a) (void)cublasLtMatrixLayoutDestroy(a);
        if (desc) (void)cublasLtMatmulDescDestroy(desc);
    }
};

namespace {

// The largest power of two up to 256 that divides the address: what the
// heuristic may assume of an operand (it assumes 256 unless told).
int alignment_bytes(const void* p) {
    const auto address = reinterpret_cast<uintptr_t>(p);
    int bytes = 256;
    while (bytes > 1 && address % static_cast<uintptr_t>(bytes) != 0) bytes /= 2;
    return bytes;
}

// The compute type Backend::gemm uses for fp32 data at this precision.
cublasComputeType_t compute_type(Precision p) {
    switch (p) {
        case Precision::tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
        case Precision::bf16: return CUBLAS_COMPUTE_32F_FAST_16BF;
        case Precision::fp16: return CUBLAS_COMPUTE_32F_FAST_16F;
        case Precision::fp32: break;
    }
    return CUBLAS_COMPUTE_32F;
}

template <class T>
void set_desc(int device, cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
    CUBLAS_CHECK(device, cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)));
}

template <class T>
void set_preference(int device, cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attribute,
                    const T& value) {
    CUBLAS_CHECK(device, cublasLtMatmulPreferenceSetAttribute(pref, attribute, &value, sizeof(value)));
}

// The preference handle of one heuristic query, destroyed on every path.
struct Preference {
    cublasLtMatmulPreference_t handle = nullptr;
    explicit Preference(int device) { CUBLAS_CHECK(device, cublasLtMatmulPreferenceCreate(&handle)); }
    ~Preference() {
        if (handle) (void)cublasLtMatmulPreferenceDestroy(handle);
    }
    Preference(const Preference&) = delete;
    Preference& operator=(const Preference&) = delete;
};

}  // namespace

LtEpilogueGemm::LtEpilogueGemm(int device, cudaStream_t stream, void* workspace, size_t workspace_bytes)
    : device_(device), stream_(stream), workspace_(workspace), workspace_bytes_(workspace_bytes) {
    CUBLAS_CHECK(device_, cublasLtCreate(&handle_));
}

LtEpilogueGemm::~LtEpilogueGemm() {
    plans_.clear();
    if (handle_) (void)cublasLtDestroy(handle_);
}

size_t LtEpilogueGemm::usable_plans() const {
    size_t usable = 0;
    for (const auto& [key, plan] : plans_) usable += plan->usable ? 1 : 0;
    return usable;
}

bool LtEpilogueGemm::forward(Precision precision, Activation a, int m, int n, int k, const float* x, const float* w,
                             const float* bias, float* y) {
    cublasLtEpilogue_t epilogue;
    if (a == Activation::relu)
        epilogue = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    else if (a == Activation::linear && bias)
        epilogue = CUBLASLT_EPILOGUE_BIAS;
    else
        return false;  // a linear layer without bias is a plain GEMM; other activations have no epilogue here
    if (m <= 0 || n <= 0 || k <= 0) return false;
    // cuBLASLt is column-major: row-major y[m,n] = x w is column-major
    // y^T[n,m] = w^T[n,k] x^T[k,m], with w and x read as they lie (no
    // transposes). The bias runs along D's rows (n), as BIAS requires.
    const Key key{static_cast<int>(epilogue), static_cast<int>(compute_type(precision)), m, n, k,
                  alignment_bytes(w), alignment_bytes(x), alignment_bytes(y), bias ? alignment_bytes(bias) : 0};
    Plan& plan = plan_for(key, CUBLAS_OP_N, n, k, k, m, n, m, bias);
    return plan.usable && run(plan, bias, w, x, y);
}

bool LtEpilogueGemm::weight_bias_grad(Precision precision, int m, int n, int k, const float* x, const float* dz,
                                      float* dw, float* db) {
    // Under tf32/bf16/fp16 the epilogue may sum the reduced-precision tiles
    // of dz (undocumented); sum_rows sums it in fp32, so only fp32 takes it.
    if (precision != Precision::fp32 || m <= 0 || n <= 0 || k <= 0 || !db) return false;
    // Row-major dw[k,n] = x^T dz is column-major dw^T[n,k] = dz^T[n,m] x[m,k]:
    // A is dz as it lies (n x m), B is x as it lies (k x m) transposed. The
    // bias gradient sums A over the GEMM's inner dimension m: BGRADA, n long.
    const Key key{static_cast<int>(CUBLASLT_EPILOGUE_BGRADA), static_cast<int>(compute_type(precision)), m, n, k,
                  alignment_bytes(dz), alignment_bytes(x), alignment_bytes(dw), alignment_bytes(db)};
    Plan& plan = plan_for(key, CUBLAS_OP_T, n, m, k, m, n, k, db);
    return plan.usable && run(plan, db, dz, x, dw);
}

LtEpilogueGemm::Plan& LtEpilogueGemm::plan_for(const Key& key, cublasOperation_t trans_b, int a_rows, int a_cols,
                                               int b_rows, int b_cols, int d_rows, int d_cols, const void* bias) {
    auto found = plans_.find(key);
    if (found != plans_.end()) return *found->second;
    auto plan = std::make_unique<Plan>();
    const auto epilogue = static_cast<cublasLtEpilogue_t>(key[0]);
    const auto compute = static_cast<cublasComputeType_t>(key[1]);
    CUBLAS_CHECK(device_, cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F));
    set_desc(device_, plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_N);
    set_desc(device_, plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, trans_b);
    set_desc(device_, plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    // The heuristic reads the pointer's alignment (not its data); each call sets its own.
    if (bias) set_desc(device_, plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    // Leading dimensions are the row counts: every operand is packed.
    CUBLAS_CHECK(device_, cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_32F, a_rows, a_cols, a_rows));
    CUBLAS_CHECK(device_, cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_32F, b_rows, b_cols, b_rows));
    CUBLAS_CHECK(device_, cublasLtMatrixLayoutCreate(&plan->d, CUDA_R_32F, d_rows, d_cols, d_rows));

    Preference pref(device_);
    set_preference(device_, pref.handle, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t{workspace_bytes_});
    set_preference(device_, pref.handle, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, static_cast<uint32_t>(key[5]));
    set_preference(device_, pref.handle, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, static_cast<uint32_t>(key[6]));
    set_preference(device_, pref.handle, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, static_cast<uint32_t>(key[7]));
    set_preference(device_, pref.handle, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, static_cast<uint32_t>(key[7]));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    // NOT_SUPPORTED (or no result) means "no kernel for this": the plan is
    // kept as unusable and the plain path runs. Any other failure is an error.
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->d,
                                                                 plan->d, pref.handle, 1, &result, &returned);
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) CUBLAS_CHECK(device_, status);
    if (status == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS &&
        result.workspaceSize <= workspace_bytes_) {
        plan->algo = result.algo;
        plan->usable = true;
    }
    return *plans_.emplace(key, std::move(plan)).first->second;
}

bool LtEpilogueGemm::run(Plan& plan, const void* bias, const float* a, const float* b, float* d) {
    set_desc(device_, plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    const float alpha = 1.0f, beta = 0.0f;
    const cublasStatus_t status = cublasLtMatmul(handle_, plan.desc, &alpha, a, plan.a, b, plan.b, &beta, d, plan.d,
                                                 d, plan.d, &plan.algo, workspace_, workspace_bytes_, stream_);
    // Refused before anything was queued: remember, and let the caller take
    // the plain path. INVALID_VALUE and the rest are our bugs or a broken GPU.
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH) {
        plan.usable = false;
        return false;
    }
    CUBLAS_CHECK(device_, status);
    return true;
}

}  // namespace gputrain
