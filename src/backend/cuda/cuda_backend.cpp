#include "backend/cuda/cuda_backend.hpp"

#include "backend/cuda/cuda_kernels.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>

#include "backend/cuda/batch_norm_kernels.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cudnn_convolution.hpp"
#include "backend/cuda/image_kernels.hpp"
#include "backend/cuda/kernels.hpp"
#include "backend/cuda/lt_epilogue_gemm.hpp"
#include "backend/gemm_input_cast.hpp"
#include "core/host_memory.hpp"

namespace gputrain {

namespace {

// cuBLAS' recommended workspace on Hopper. Given up front so that a GEMM
// never allocates (cuBLAS would otherwise take it from its own pool).
constexpr size_t kCublasWorkspaceBytes = 32u << 20;

// Column sums (bias gradients, batch-norm statistics) split the rows into
// chunks and keep each chunk's sums here (1 MiB: 512 chunks of 256 columns, or
// of 128 channels' two sums; wider layers use fewer chunks, which their many
// columns make up for).
constexpr size_t kColumnScratchFloats = size_t{256} << 10;

}  // namespace

int cuda_device_count() {
    int count = 0;
    // No driver, no GPU, or a driver older than the runtime: report none.
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count;
}

std::unique_ptr<Backend> make_cuda_backend(int device) { return std::make_unique<CudaBackend>(device); }

CudaBackend::CudaBackend(int device) : device_(device), pool_(device) {
    const int count = cuda_device_count();
    if (device < 0 || device >= count)
        throw Error(fmt::format("cuda:{}: no such GPU ({} visible{})", device, count,
                                count == 0 ? "; is the NVIDIA driver installed and CUDA_VISIBLE_DEVICES unset?"
                                           : ""));
    try {
        activate();
        cudaStream_t stream = nullptr;
        // Non-blocking: no implicit ordering with the legacy default stream
        // that other libraries may use.
        CUDA_CHECK(device_, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        stream_ = stream;
        cublasHandle_t handle = nullptr;
        CUBLAS_CHECK(device_, cublasCreate(&handle));
        cublas_ = handle;
        CUBLAS_CHECK(device_, cublasSetStream(handle, stream));
        // After cublasSetStream, which resets the workspace to cuBLAS' own pool.
        CUDA_CHECK(device_, cudaMalloc(&cublas_workspace_, kCublasWorkspaceBytes));
        CUBLAS_CHECK(device_, cublasSetWorkspace(handle, cublas_workspace_, kCublasWorkspaceBytes));
        // Plain FP32 (no TF32) so that GEMMs agree with the CPU backend to ~1e-6.
        CUBLAS_CHECK(device_, cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
        convolution_ = std::make_unique<CudnnConvolution>(device_, stream);
        convolution_->use_cublas(handle);
        epilogues_ = std::make_unique<LtEpilogueGemm>(device_, stream, cublas_workspace_, kCublasWorkspaceBytes);
        // Fixed, like the cuBLAS workspace: outside the pool, whose figures
        // count what the replica itself allocates.
        void* scratch = nullptr;
        CUDA_CHECK(device_, cudaMalloc(&scratch, kColumnScratchFloats * sizeof(float)));
        column_scratch_ = static_cast<float*>(scratch);
        CUDA_CHECK(device_, cudaMalloc(reinterpret_cast<void**>(&nonfinite_count_), kFiniteWords * sizeof(int)));
        // check_finite's words start at zero and its last block leaves them so.
        CUDA_CHECK(device_, cudaMemsetAsync(nonfinite_count_, 0, kFiniteWords * sizeof(int), stream_));
        cudaStream_t copy_stream = nullptr;
        CUDA_CHECK(device_, cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking));
        copy_stream_ = copy_stream;
        cudaEvent_t fence = nullptr;
        CUDA_CHECK(device_, cudaEventCreateWithFlags(&fence, cudaEventDisableTiming));
        copy_fence_ = fence;
        for (auto& e : copy_events_) {
            cudaEvent_t event = nullptr;
            CUDA_CHECK(device_, cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
            e = event;
        }
    } catch (...) {
        destroy();
        throw;
    }
}

CudaBackend::~CudaBackend() { destroy(); }

void CudaBackend::destroy() noexcept {
    // Nothing here may throw; a lost context makes every call fail, which is fine.
    (void)cudaSetDevice(device_);
    if (stream_) (void)cudaStreamSynchronize(stream_);
    // A staged input copy may still read pinned memory or write the pool's.
    if (copy_stream_) (void)cudaStreamSynchronize(copy_stream_);
    for (cudaGraphExec_t exec : graphs_) (void)cudaGraphExecDestroy(exec);
    graphs_.clear();
    graph_nodes_.clear();
    convolution_.reset();
    epilogues_.reset();
    pool_.free_all();
    if (column_scratch_) (void)cudaFree(column_scratch_);
    column_scratch_ = nullptr;
    if (cublas_) (void)cublasDestroy(cublas_);
    if (cublas_workspace_) (void)cudaFree(cublas_workspace_);
    if (nonfinite_count_) (void)cudaFree(nonfinite_count_);
    if (copy_stream_) (void)cudaStreamSynchronize(copy_stream_);
    for (auto& e : copy_events_) {
        if (e) (void)cudaEventDestroy(e);
        e = nullptr;
    }
    if (copy_fence_) (void)cudaEventDestroy(copy_fence_);
    if (copy_stream_) (void)cudaStreamDestroy(copy_stream_);
    copy_fence_ = nullptr;
    copy_stream_ = nullptr;
    if (stream_) (void)cudaStreamDestroy(stream_);
    cublas_ = nullptr;
    cublas_workspace_ = nullptr;
    stream_ = nullptr;
    (void)cudaGetLastError();
}

// CUDA's current device is per host thread, and replica threads may also run
// other GPUs' work (communicators): every entry point sets it, not only
// bind_thread. cudaSetDevice to the current device costs next to nothing.
void CudaBackend::activate() const { CUDA_CHECK(device_, cudaSetDevice(device_)); }

void CudaBackend::bind_thread() { activate(); }

std::string CudaBackend::name() const { return "cuda:" + std::to_string(device_); }

void* CudaBackend::stream_handle() const { return static_cast<void*>(stream_); }


// ---- memory ----

void* CudaBackend::allocate_bytes(size_t bytes) {
    activate();
    void* block = pool_.try_allocate(bytes);
    if (!block) {
        // The cache may hold free blocks of the wrong sizes: hand them back to
        // the driver (once queued work no longer uses them) and try again.
        CUDA_CHECK(device_, cudaStreamSynchronize(stream_));
        pool_.release_cached();
        block = pool_.try_allocate(bytes);
    }
    if (!block) throw_out_of_memory(bytes);
    // Zeroed, as CpuBackend's memory is (optimizer moments rely on it).
    if (bytes > 0) CUDA_CHECK(device_, cudaMemsetAsync(block, 0, bytes, stream_));
    return block;
}

void CudaBackend::throw_out_of_memory(size_t bytes) const {
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
    const DevicePoolStats s = pool_.stats();
    throw Error(fmt::format("{}: out of GPU memory: {} ({} bytes) requested, {} of {} free, {} already in use by "
                            "this replica; lower training.batch_size or use a smaller model",
                            name(), human_bytes(bytes), bytes, human_bytes(free_bytes), human_bytes(total_bytes),
                            human_bytes(s.bytes_in_use)));
}

void CudaBackend::release(void* ptr) { pool_.release(ptr); }

void CudaBackend::copy_to_device(void* dst, const void* host_src, size_t bytes) {
    if (bytes == 0) return;
    activate();
    CUDA_CHECK(device_, cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
    // The caller may overwrite host_src as soon as we return; from pinned
    // memory the copy above may still be in flight, so wait for it.
    CUDA_CHECK(device_, cudaStreamSynchronize(stream_));
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
    if (bytes == 0) return;
    activate();
    CUDA_CHECK(device_, cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    // The caller reads host_dst next.
    CUDA_CHECK(device_, cudaStreamSynchronize(stream_));
}

void CudaBackend::copy(void* dst, const void* src, size_t bytes) {
    if (bytes == 0 || dst == src) return;
    activate();
    CUDA_CHECK(device_, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::synchronize() {
    activate();
    CUDA_CHECK(device_, cudaStreamSynchronize(stream_));
}

// ---- input batches ----

size_t CudaBackend::free_device_bytes() {
    activate();
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(device_, cudaMemGetInfo(&free_bytes, &total_bytes));
    return free_bytes;
}

void* CudaBackend::allocate_host_pinned(size_t bytes) {
    activate();
    void* p = nullptr;
    CUDA_CHECK(device_, cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocDefault));
    return p;
}

void CudaBackend::release_host_pinned(void* host_ptr) {
    if (!host_ptr) return;
    (void)cudaSetDevice(device_);
    // Not a throwing check: replicas release this in destructors.
    (void)cudaFreeHost(host_ptr);
}

uint64_t CudaBackend::copy_to_device_async(void* dst, const void* pinned_src, size_t bytes) {
    activate();
    // After the compute work that last used dst (see wait_copies); a fence
    // never recorded is already complete.
    CUDA_CHECK(device_, cudaStreamWaitEvent(copy_stream_, copy_fence_, 0));
    if (bytes > 0) CUDA_CHECK(device_, cudaMemcpyAsync(dst, pinned_src, bytes, cudaMemcpyHostToDevice, copy_stream_));
    const uint64_t ticket = next_ticket_++;
    CUDA_CHECK(device_, cudaEventRecord(copy_events_[ticket % kCopyEvents], copy_stream_));
    return ticket;
}

void CudaBackend::wait_copies() {
    activate();
    if (next_ticket_ > 1)
        CUDA_CHECK(device_, cudaStreamWaitEvent(stream_, copy_events_[(next_ticket_ - 1) % kCopyEvents], 0));
    CUDA_CHECK(device_, cudaEventRecord(copy_fence_, stream_));
}

void CudaBackend::wait_copy_on_host(uint64_t ticket) {
    if (ticket == 0) return;
    activate();
    // If the ring has moved on, this event belongs to a later copy, which
    // finishes after the one asked for.
    CUDA_CHECK(device_, cudaEventSynchronize(copy_events_[ticket % kCopyEvents]));
}

// ---- compute ----

void CudaBackend::fill(float* x, size_t n, float value) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::fill(stream_, x, n, value));
}

void CudaBackend::scale(float* x, size_t n, float alpha) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::scale(stream_, x, n, alpha));
}

void CudaBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                       const float* b, int ldb, float beta, float* c, int ldc) {
    if (m <= 0 || n <= 0) return;
    activate();
    if (k <= 0) {  // C = beta * C, and exactly 0 for beta == 0 (as BLAS does)
        CUDA_CHECK(device_, cuda_kernels::scale_matrix(stream_, c, m, n, ldc, beta));
        return;
    }
    // cuBLAS is column-major. A row-major matrix read column-major is its
    // transpose, so row-major C = op(A) op(B) is column-major
    // C^T = op(B)^T op(A)^T: swap the operands (and m with n), keep the flags.
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (precision_ == Precision::fp32) {
        CUBLAS_CHECK(device_, cublasSgemm(cublas_, op_b, op_a, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
        return;
    }
    if (casts_gemm_inputs()) return gemm_on_16bit_copies(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    // fp32 in and out; the compute type lets cuBLAS round the inputs to
    // TF32/bf16/fp16 for the tensor cores and accumulate in fp32.
    const cublasComputeType_t compute = precision_ == Precision::tf32   ? CUBLAS_COMPUTE_32F_FAST_TF32
                                        : precision_ == Precision::bf16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                                        : CUBLAS_COMPUTE_32F_FAST_16F;
    CUBLAS_CHECK(device_, cublasGemmEx(cublas_, op_b, op_a, n, m, k, &alpha, b, CUDA_R_32F, ldb, a, CUDA_R_32F, lda,
                                       &beta, c, CUDA_R_32F, ldc, compute, CUBLAS_GEMM_DEFAULT));
}

bool CudaBackend::casts_gemm_inputs() const {
    return cast_gemm_inputs_ && (precision_ == Precision::bf16 || precision_ == Precision::fp16);
}

void CudaBackend::gemm_on_16bit_copies(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                                       int lda, const float* b, int ldb, float beta, float* c, int ldc) {
    const CastCopyLayout l = cast_copy_layout(trans_a, trans_b, m, n, k, lda, ldb);
    if (l.total_bytes > gemm_scratch_bytes_)
        throw Error(fmt::format("{}: gemm {}x{}x{} needs {} bytes of scratch for its 16-bit inputs, {} reserved "
                                "(reserve_gemm_scratch was not given the model's need: a bug)",
                                name(), m, n, k, l.total_bytes, gemm_scratch_bytes_));
    void* a16 = gemm_scratch_;
    void* b16 = static_cast<char*>(gemm_scratch_) + l.b_offset_bytes;
    // The copies keep each matrix's layout and leading dimension.
    gemm_copy(a, a16, l.a_elements);
    gemm_copy(b, b16, l.b_elements);
    gemm_copied(trans_a, trans_b, m, n, k, alpha, a16, lda, b16, ldb, beta, c, ldc);
}

void CudaBackend::gemm_copy(const float* x, void* copy, size_t n) {
    if (!casts_gemm_inputs()) Backend::gemm_copy(x, copy, n);  // throws
    activate();
    // Every element rounded to nearest (even), as autocast's casts do.
    const auto cast = precision_ == Precision::bf16 ? cuda_kernels::cast_to_bf16 : cuda_kernels::cast_to_fp16;
    CUDA_CHECK(device_, cast(stream_, x, copy, n));
}

void CudaBackend::gemm_copied(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* a, int lda,
                              const void* b, int ldb, float beta, float* c, int ldc) {
    if (!casts_gemm_inputs()) Backend::gemm_copied(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (m <= 0 || n <= 0) return;
    activate();
    if (k <= 0) {  // as gemm()
        CUDA_CHECK(device_, cuda_kernels::scale_matrix(stream_, c, m, n, ldc, beta));
        return;
    }
    const cudaDataType_t type = precision_ == Precision::bf16 ? CUDA_R_16BF : CUDA_R_16F;
    // Row-major to cuBLAS's column-major as in gemm(): operands swapped.
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(device_, cublasGemmEx(cublas_, op_b, op_a, n, m, k, &alpha, b, type, ldb, a, type, lda, &beta, c,
                                       CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

bool CudaBackend::gemm_bias_activation(Activation a, int m, int n, int k, const float* x, const float* w,
                                       const float* bias, float* y) {
    if (!gemm_epilogues_ || casts_gemm_inputs()) return false;
    activate();
    return epilogues_->forward(precision_, a, m, n, k, x, w, bias, y);
}

bool CudaBackend::gemm_weight_bias_grad(int m, int n, int k, const float* x, const float* dz, float* dw, float* db) {
    if (!gemm_epilogues_ || casts_gemm_inputs()) return false;
    activate();
    return epilogues_->weight_bias_grad(precision_, m, n, k, x, dz, dw, db);
}

Backend::EpiloguePlans CudaBackend::gemm_epilogue_plans() const {
    return {epilogues_->plans(), epilogues_->usable_plans()};
}

size_t CudaBackend::gemm_scratch_bytes(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb) const {
    return casts_gemm_inputs() ? cast_copy_layout(trans_a, trans_b, m, n, k, lda, ldb).total_bytes : 0;
}

void CudaBackend::reserve_gemm_scratch(size_t bytes) {
    // Called before any step is recorded (the model's construction, bench):
    // a graph recorded earlier would still write into the block released here.
    if (bytes <= gemm_scratch_bytes_) return;
    void* grown = allocate_bytes(bytes);
    // The pool hands the old block out again only to work queued after this.
    if (gemm_scratch_) pool_.release(gemm_scratch_);
    gemm_scratch_ = grown;
    gemm_scratch_bytes_ = bytes;
}

void CudaBackend::set_precision(Precision precision) {
    precision_ = precision;
    convolution_->allow_tensor_ops(precision != Precision::fp32);
}

void CudaBackend::set_deterministic(bool deterministic) { convolution_->prefer_deterministic(deterministic); }

void CudaBackend::add_bias(float* y, const float* bias, int rows, int cols) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::add_bias(stream_, y, bias, rows, cols));
}

void CudaBackend::sum_rows(const float* dy, float* db, int rows, int cols) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::sum_rows(stream_, dy, db, rows, cols, column_scratch_, kColumnScratchFloats));
}

void CudaBackend::bias_activation_forward(Activation a, float* z, const float* bias, float* y, int rows, int cols) {
    if (a == Activation::linear || a == Activation::softmax)
        throw Error(not_elementwise(name(), "bias_activation_forward", a));
    activate();
    CUDA_CHECK(device_, cuda_kernels::bias_activation_forward(stream_, a, z, bias, y, rows, cols));
}

void CudaBackend::activation_bias_backward(Activation a, const float* z, const float* y, const float* dy, float* dz,
                                           float* db, int rows, int cols) {
    if (a == Activation::linear || a == Activation::softmax)
        throw Error(not_elementwise(name(), "activation_bias_backward", a));
    activate();
    CUDA_CHECK(device_, cuda_kernels::activation_bias_backward(stream_, a, z, y, dy, dz, db, rows, cols,
                                                               column_scratch_, kColumnScratchFloats));
}

void CudaBackend::bias_activation_forward_copy(Activation a, float* z, const float* bias, float* y, void* y_copy,
                                               int rows, int cols) {
    if (!casts_gemm_inputs()) return Backend::bias_activation_forward_copy(a, z, bias, y, y_copy, rows, cols);
    if (a == Activation::linear || a == Activation::softmax)
        throw Error(not_elementwise(name(), "bias_activation_forward_copy", a));
    activate();
    CUDA_CHECK(device_, cuda_kernels::bias_activation_forward_copy(stream_, a, z, bias, y, y_copy,
                                                                   precision_ == Precision::bf16, rows, cols));
}

void CudaBackend::activation_bias_backward_copy(Activation a, const float* z, const float* y, const float* dy,
                                                float* dz, void* dz_copy, float* db, int rows, int cols) {
    if (!casts_gemm_inputs()) return Backend::activation_bias_backward_copy(a, z, y, dy, dz, dz_copy, db, rows, cols);
    if (a == Activation::linear || a == Activation::softmax)
        throw Error(not_elementwise(name(), "activation_bias_backward_copy", a));
    activate();
    CUDA_CHECK(device_, cuda_kernels::activation_bias_backward_copy(stream_, a, z, y, dy, dz_copy,
                                                                    precision_ == Precision::bf16, db, rows, cols,
                                                                    column_scratch_, kColumnScratchFloats));
}

void CudaBackend::activation_forward(Activation a, const float* x, float* y, size_t n) {
    if (a == Activation::softmax) throw Error(name() + ": activation_forward: softmax is row-wise (softmax_forward)");
    activate();
    CUDA_CHECK(device_, cuda_kernels::activation_forward(stream_, a, x, y, n));
}

void CudaBackend::activation_backward(Activation a, const float* x, const float* y, const float* dy, float* dx,
                                      size_t n) {
    if (a == Activation::softmax)
        throw Error(name() + ": activation_backward: softmax is row-wise (softmax_backward)");
    activate();
    CUDA_CHECK(device_, cuda_kernels::activation_backward(stream_, a, x, y, dy, dx, n));
}

void CudaBackend::softmax_forward(const float* x, float* y, int rows, int cols) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::softmax_forward(stream_, x, y, rows, cols));
}

void CudaBackend::softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::softmax_backward(stream_, y, dy, dx, rows, cols));
}

void CudaBackend::dropout_forward(const float* x, float* y, float* mask_out, size_t n, float rate, uint64_t key,
                                  uint64_t first_index) {
    activate();
    // Computed here, as CpuBackend does, so both scale by the same float.
    const float keep_scale = 1.0f / (1.0f - rate);
    CUDA_CHECK(device_,
               cuda_kernels::dropout_forward(stream_, x, y, mask_out, n, rate, keep_scale, key, first_index));
}

void CudaBackend::dropout_forward_keyed(const float* x, float* y, float* mask_out, size_t n, float rate,
                                        const uint32_t* key_words, uint64_t first_index) {
    activate();
    const float keep_scale = 1.0f / (1.0f - rate);
    CUDA_CHECK(device_, cuda_kernels::dropout_forward_keyed(stream_, x, y, mask_out, n, rate, keep_scale, key_words,
                                                            first_index));
}

bool CudaBackend::all_finite(const float* x, size_t n) {
    activate();
    CUDA_CHECK(device_, cudaMemsetAsync(nonfinite_count_, 0, sizeof(int), stream_));
    CUDA_CHECK(device_, cuda_kernels::count_nonfinite(stream_, x, n, nonfinite_count_));
    int count = 0;
    CUDA_CHECK(device_, cudaMemcpyAsync(&count, nonfinite_count_, sizeof(int), cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(device_, cudaStreamSynchronize(stream_));
    return count == 0;
}

void CudaBackend::check_finite(const float* x, size_t n, int32_t* guard) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::check_finite(stream_, x, n, nonfinite_count_ + 1, guard));
}

void CudaBackend::record_finite(int32_t* guard, bool finite) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::record_finite(stream_, guard, finite));
}

void CudaBackend::scale_by(float* x, size_t n, const float* factor) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::scale_by(stream_, x, n, factor));
}

void CudaBackend::loss_scale_update(math::LossScaleState* state, const int32_t* guard, bool sticky) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::loss_scale_update(stream_, state, guard, sticky));
}

void CudaBackend::upload(void* dst, const void* host_src, size_t bytes) {
    static_assert(cuda_kernels::kUploadBytes == kUploadBytes, "the upload kernel carries Backend::kUploadBytes");
    if (bytes > kUploadBytes) throw Error(name() + ": " + upload_too_large(bytes));
    activate();
    CUDA_CHECK(device_, cuda_kernels::upload(stream_, dst, host_src, bytes));
}

const KernelTable& CudaBackend::kernels() const { return cuda_kernels::table(); }

void CudaBackend::queue(KernelTable::Fn kernel, const void* op, size_t op_bytes) {
    (void)op_bytes;
    activate();
    kernel(*this, op);
}

void CudaBackend::softmax_cross_entropy(const float* logits, const int32_t* labels, int rows, int cols,
                                        float grad_scale, float* grad, float* stats, float smoothing) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::softmax_cross_entropy(stream_, logits, labels, rows, cols, grad_scale, grad,
                                                            stats, smoothing));
}

void CudaBackend::cross_entropy_probs(const float* probs, const int32_t* labels, int rows, int cols,
                                      float grad_scale, float* grad, float* stats, float smoothing) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::cross_entropy_probs(stream_, probs, labels, rows, cols, grad_scale, grad, stats,
                                                          smoothing));
}

void CudaBackend::mean_squared_error(const float* y, const int32_t* labels, int rows, int cols, float grad_scale,
                                     float* grad, float* stats) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::mean_squared_error(stream_, y, labels, rows, cols, grad_scale, grad, stats));
}

void CudaBackend::regression_loss(const float* y, const float* targets, int rows, int cols, math::RegressionLoss kind,
                                  float delta, math::RegressionMetric metric, float grad_scale, float* grad,
                                  float* stats) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::regression_loss(stream_, y, targets, rows, cols, kind, delta, metric, grad_scale,
                                                      grad, stats));
}

// ---- convolution and pooling ----

size_t CudaBackend::conv2d_workspace_bytes(const Conv2dGeometry& g) {
    activate();
    return convolution_->workspace_bytes(g);
}

void CudaBackend::conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w, float* y, void* workspace,
                                 size_t workspace_bytes) {
    activate();
    convolution_->forward(g, x, w, y, workspace, workspace_bytes);
}

void CudaBackend::conv2d_backward_data(const Conv2dGeometry& g, const float* dy, const float* w, float* dx,
                                       void* workspace, size_t workspace_bytes) {
    activate();
    convolution_->backward_data(g, dy, w, dx, workspace, workspace_bytes);
}

void CudaBackend::conv2d_backward_filter(const Conv2dGeometry& g, const float* x, const float* dy, float* dw,
                                         void* workspace, size_t workspace_bytes) {
    activate();
    convolution_->backward_filter(g, x, dy, dw, workspace, workspace_bytes);
}

void CudaBackend::pool2d_forward(const Pool2dGeometry& g, const float* x, float* y) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::pool2d_forward(stream_, g, x, y));
}

void CudaBackend::pool2d_backward(const Pool2dGeometry& g, const float* x, const float* /*y*/, const float* dy,
                                  float* dx) {
    activate();
    // The first maximum is found again from x (as the CPU does), not by comparing with y.
    CUDA_CHECK(device_, cuda_kernels::pool2d_backward(stream_, g, x, dy, dx));
}

// ---- batch normalization ----

void CudaBackend::batch_norm_sums(const float* x, int rows, int channels, const float* shift, float* sums) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::batch_norm_sums(stream_, x, rows, channels, shift, sums, column_scratch_,
                                                      kColumnScratchFloats));
}

void CudaBackend::batch_norm_finalize(const float* sums, float count, int channels, float eps, float momentum,
                                      const float* shift, float* mean_invstd, float* moving_mean, float* moving_var) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::batch_norm_finalize(stream_, sums, count, channels, eps, momentum, shift,
                                                          mean_invstd, moving_mean, moving_var));
}

void CudaBackend::batch_norm_apply(const float* x, const float* mean_invstd, const float* gamma, const float* beta,
                                   float* y, int rows, int channels) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::batch_norm_apply(stream_, x, mean_invstd, gamma, beta, y, rows, channels));
}

void CudaBackend::batch_norm_inference(const float* x, const float* moving_mean, const float* moving_var, float eps,
                                       const float* gamma, const float* beta, float* y, int rows, int channels) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::batch_norm_inference(stream_, x, moving_mean, moving_var, eps, gamma, beta, y,
                                                           rows, channels));
}

void CudaBackend::batch_norm_backward_sums(const float* x, const float* dy, const float* mean_invstd, int rows,
                                           int channels, float* sums) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::batch_norm_backward_sums(stream_, x, dy, mean_invstd, rows, channels, sums,
                                                               column_scratch_, kColumnScratchFloats));
}

void CudaBackend::batch_norm_backward_data(const float* x, const float* dy, const float* mean_invstd,
                                           const float* gamma, const float* sums, float count, float* dx, int rows,
                                           int channels) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::batch_norm_backward_data(stream_, x, dy, mean_invstd, gamma, sums, count, dx,
                                                               rows, channels));
}

// ---- optimizers ----

void CudaBackend::adam_step(float* params, const float* grads, float* m, float* v, size_t n,
                            const math::AdamParams& a) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::adam_step(stream_, params, grads, m, v, n, a));
}

void CudaBackend::sgd_step(float* params, const float* grads, float* velocity, size_t n, const math::SgdParams& s) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::sgd_step(stream_, params, grads, velocity, n, s));
}

void CudaBackend::adam_step_guarded(float* params, const float* grads, float* m, float* v, size_t n,
                                    const math::AdamParams* a, const int32_t* skip) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::adam_step_guarded(stream_, params, grads, m, v, n, a, skip));
}

void CudaBackend::sgd_step_guarded(float* params, const float* grads, float* velocity, size_t n,
                                   const math::SgdParams* s, const int32_t* skip) {
    activate();
    CUDA_CHECK(device_, cuda_kernels::sgd_step_guarded(stream_, params, grads, velocity, n, s, skip));
}

// ---- graphs ----

void CudaBackend::begin_capture() {
    activate();
    CUDA_CHECK(device_, cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
}

int CudaBackend::end_capture() {
    activate();
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    if (ended != cudaSuccess || graph == nullptr) {
        (void)cudaGetLastError();  // capture errors are not sticky; clear the last-error slot
        if (graph) (void)cudaGraphDestroy(graph);
        throw Error(fmt::format("{}: the work could not be recorded as a CUDA graph ({}: {})", name(),
                                cudaGetErrorName(ended), cudaGetErrorString(ended)));
    }
    size_t nodes = 0;  // reported only (gputrain fit's log): 0 if CUDA cannot say
    if (cudaGraphGetNodes(graph, nullptr, &nodes) != cudaSuccess) {
        (void)cudaGetLastError();
        nodes = 0;
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    CUDA_CHECK(device_, made);
    graphs_.push_back(exec);
    graph_nodes_.push_back(nodes);
    return static_cast<int>(graphs_.size() - 1);
}

size_t CudaBackend::graph_nodes(int graph) const {
    return graph >= 0 && static_cast<size_t>(graph) < graph_nodes_.size() ? graph_nodes_[static_cast<size_t>(graph)]
                                                                           : 0;
}

void CudaBackend::replay(int graph) {
    if (graph < 0 || static_cast<size_t>(graph) >= graphs_.size())
        throw Error(fmt::format("{}: internal: no recorded graph {}", name(), graph));
    activate();
    CUDA_CHECK(device_, cudaGraphLaunch(graphs_[static_cast<size_t>(graph)], stream_));
}

}  // namespace gputrain
