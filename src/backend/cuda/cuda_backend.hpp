// CudaBackend: the Backend on one GPU. It owns a non-blocking stream, a cuBLAS
// handle and a cuDNN handle (convolutions) bound to it and a caching
// allocator; every copy, GEMM, convolution and kernel runs on that stream, in
// call order. Host code can include this header without the
// CUDA headers.
//
// Threads: a backend may be built on one thread and used on another (each call
// makes its GPU current, as bind_thread does), but not by two threads at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/device_pool.hpp"

// The CUDA runtime's and cuBLAS' handle types (cudaStream_t is CUstream_st*,
// cublasHandle_t is cublasContext*), declared here so that including this
// header does not pull in the CUDA headers.
struct CUstream_st;
struct CUevent_st;
struct CUgraphExec_st;
struct cublasContext;

namespace gputrain {

class CudnnConvolution;  // cudnn_convolution.hpp
class LtEpilogueGemm;    // lt_epilogue_gemm.hpp

class CudaBackend : public Backend {
public:
    // Makes `device` current, creates the stream, the cuBLAS handle and its
    // workspace, the cuDNN handle and the batch-norm scratch. Throws Error
    // when there is no such GPU.
    explicit CudaBackend(int device);
    ~CudaBackend() override;
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    std::string name() const override;  // "cuda:<device>"
    void bind_thread() override;        // cudaSetDevice(device()) on the calling thread
    int device() const { return device_; }
    // The cudaStream_t all work is queued on, for a communicator (NCCL) that
    // must order its collectives with this backend's kernels.
    void* stream_handle() const;
    // GEMMs in `precision` (fp32 by default; TF32/bf16/fp16 on the tensor
    // cores); convolutions in TF32 unless fp32 (cuDNN has no bf16 or fp16
    // compute on fp32 data short of down-converting the tensors).
    void set_precision(Precision precision) override;
    // bf16/fp16 GEMMs: cast the inputs into 16-bit copies in the GEMM scratch
    // and call cuBLAS's native 16-bit GEMM, instead of CUBLAS_COMPUTE_32F_FAST_*.
    void set_gemm_input_cast(bool cast) override { cast_gemm_inputs_ = cast; }
    // Convolution algorithms: deterministic ones preferred (the default) or not.
    void set_deterministic(bool deterministic) override;
    size_t gemm_scratch_bytes(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb) const override;
    void reserve_gemm_scratch(size_t bytes) override;
    // 2 under bf16/fp16 with the cast, else 0; the copies are what
    // gemm_on_16bit_copies makes, so gemm_copied gives gemm()'s bits.
    size_t gemm_copy_bytes() const override { return casts_gemm_inputs() ? 2 : 0; }
    void gemm_copy(const float* x, void* copy, size_t n) override;
    void gemm_copied(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* a, int lda,
                     const void* b, int ldb, float beta, float* c, int ldc) override;
    // Dense GEMMs with cuBLASLt epilogues (lt_epilogue_gemm.hpp), off by
    // default; not under cast_gemm_inputs, whose 16-bit copies they skip.
    void set_gemm_epilogues(bool on) override { gemm_epilogues_ = on; }
    bool gemm_bias_activation(Activation a, int m, int n, int k, const float* x, const float* w, const float* bias,
                              float* y) override;
    bool gemm_weight_bias_grad(int m, int n, int k, const float* x, const float* dz, float* dw, float* db) override;
    EpiloguePlans gemm_epilogue_plans() const override;
    DevicePoolStats pool_stats() const { return pool_.stats(); }

    // Memory is zeroed like CpuBackend's. copy_to_device returns once the
    // host buffer may be reused; copy_to_host once the data is on the host.
    void* allocate_bytes(size_t bytes) override;
    void release(void* ptr) override;
    void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
    void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
    void copy(void* dst, const void* src, size_t bytes) override;
    void synchronize() override;

    // Batches: pinned host memory (cudaHostAlloc), copies on a second stream
    // ordered against the compute stream by events, a gather kernel.
    bool has_device_memory() const override { return true; }
    size_t free_device_bytes() override;
    void* allocate_host_pinned(size_t bytes) override;
    void release_host_pinned(void* host_ptr) override;
    uint64_t copy_to_device_async(void* dst, const void* pinned_src, size_t bytes) override;
    void wait_copies() override;
    void wait_copy_on_host(uint64_t ticket) override;

    void fill(float* x, size_t n, float value) override;
    void scale(float* x, size_t n, float alpha) override;
    void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
              int ldb, float beta, float* c, int ldc) override;
    void add_bias(float* y, const float* bias, int rows, int cols) override;
    void sum_rows(const float* dy, float* db, int rows, int cols) override;
    void bias_activation_forward(Activation a, float* z, const float* bias, float* y, int rows, int cols) override;
    void activation_bias_backward(Activation a, const float* z, const float* y, const float* dy, float* dz,
                                  float* db, int rows, int cols) override;
    // Round y to its copy, and dz to its copy (dz unwritten), inside the pass.
    void bias_activation_forward_copy(Activation a, float* z, const float* bias, float* y, void* y_copy, int rows,
                                      int cols) override;
    void activation_bias_backward_copy(Activation a, const float* z, const float* y, const float* dy, float* dz,
                                       void* dz_copy, float* db, int rows, int cols) override;
    void activation_forward(Activation a, const float* x, float* y, size_t n) override;
    void activation_backward(Activation a, const float* x, const float* y, const float* dy, float* dx,
                             size_t n) override;
    void softmax_forward(const float* x, float* y, int rows, int cols) override;
    void softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols) override;
    void dropout_forward(const float* x, float* y, float* mask_out, size_t n, float rate, uint64_t key,
                         uint64_t first_index) override;
    void dropout_forward_keyed(const float* x, float* y, float* mask_out, size_t n, float rate,
                               const uint32_t* key_words, uint64_t first_index) override;
    const KernelTable& kernels() const override;
    void queue(KernelTable::Fn kernel, const void* op, size_t op_bytes) override;
    bool all_finite(const float* x, size_t n) override;
    void check_finite(const float* x, size_t n, int32_t* guard) override;
    void record_finite(int32_t* guard, bool finite) override;
    void scale_by(float* x, size_t n, const float* factor) override;
    void loss_scale_update(math::LossScaleState* state, const int32_t* guard, bool sticky) override;
    void upload(void* dst, const void* host_src, size_t bytes) override;
    void softmax_cross_entropy(const float* logits, const int32_t* labels, int rows, int cols, float grad_scale,
                               float* grad, float* stats, float smoothing) override;
    void cross_entropy_probs(const float* probs, const int32_t* labels, int rows, int cols, float grad_scale,
                             float* grad, float* stats, float smoothing) override;
    void mean_squared_error(const float* y, const int32_t* labels, int rows, int cols, float grad_scale,
                            float* grad, float* stats) override;
    void regression_loss(const float* y, const float* targets, int rows, int cols, math::RegressionLoss kind,
                         float delta, math::RegressionMetric metric, float grad_scale, float* grad,
                         float* stats) override;

    // Convolutions through cuDNN (cudnn_convolution.hpp); pooling and batch
    // norm are our own kernels (image_kernels.cu, batch_norm_kernels.cu).
    size_t conv2d_workspace_bytes(const Conv2dGeometry& g) override;
    void conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w, float* y, void* workspace,
                        size_t workspace_bytes) override;
    void conv2d_backward_data(const Conv2dGeometry& g, const float* dy, const float* w, float* dx, void* workspace,
                              size_t workspace_bytes) override;
    void conv2d_backward_filter(const Conv2dGeometry& g, const float* x, const float* dy, float* dw, void* workspace,
                                size_t workspace_bytes) override;
    void pool2d_forward(const Pool2dGeometry& g, const float* x, float* y) override;
    void pool2d_backward(const Pool2dGeometry& g, const float* x, const float* y, const float* dy,
                         float* dx) override;

    void batch_norm_sums(const float* x, int rows, int channels, const float* shift, float* sums) override;
    void batch_norm_finalize(const float* sums, float count, int channels, float eps, float momentum,
                             const float* shift, float* mean_invstd, float* moving_mean, float* moving_var) override;
    void batch_norm_apply(const float* x, const float* mean_invstd, const float* gamma, const float* beta, float* y,
                          int rows, int channels) override;
    void batch_norm_inference(const float* x, const float* moving_mean, const float* moving_var, float eps,
                              const float* gamma, const float* beta, float* y, int rows, int channels) override;
    void batch_norm_backward_sums(const float* x, const float* dy, const float* mean_invstd, int rows, int channels,
                                  float* sums) override;
    void batch_norm_backward_data(const float* x, const float* dy, const float* mean_invstd, const float* gamma,
                                  const float* sums, float count, float* dx, int rows, int channels) override;

    void adam_step(float* params, const float* grads, float* m, float* v, size_t n,
                   const math::AdamParams& a) override;
    void sgd_step(float* params, const float* grads, float* velocity, size_t n, const math::SgdParams& s) override;
    void adam_step_guarded(float* params, const float* grads, float* m, float* v, size_t n,
                           const math::AdamParams* a, const int32_t* skip) override;
    void sgd_step_guarded(float* params, const float* grads, float* velocity, size_t n, const math::SgdParams* s,
                          const int32_t* skip) override;

    // CUDA graphs: stream capture of the compute stream (thread-local mode, so
    // other replica threads go on queueing their own work), instantiated once
    // and kept until the backend goes.
    bool can_capture() const override { return true; }
    void begin_capture() override;
    int end_capture() override;
    void replay(int graph) override;
    size_t graph_nodes(int graph) const override;

private:
    void activate() const;  // cudaSetDevice(device_) on the calling thread
    bool casts_gemm_inputs() const;
    void gemm_on_16bit_copies(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                              const float* b, int ldb, float beta, float* c, int ldc);
    [[noreturn]] void throw_out_of_memory(size_t bytes) const;
    void destroy() noexcept;

    int device_;
    Precision precision_ = Precision::fp32;
    bool cast_gemm_inputs_ = false;
    bool gemm_epilogues_ = false;
    // The 16-bit input copies of gemm() under cast_gemm_inputs_, from the pool.
    void* gemm_scratch_ = nullptr;
    size_t gemm_scratch_bytes_ = 0;
    CUstream_st* stream_ = nullptr;
    // Input copies: their stream, the compute-stream point they wait for
    // (recorded by wait_copies), and a ring of events, one per ticket modulo
    // its size (a later copy's event is a safe stand-in for an earlier one's:
    // the copy stream runs in order).
    static constexpr size_t kCopyEvents = 8;
    CUstream_st* copy_stream_ = nullptr;
    CUevent_st* copy_fence_ = nullptr;
    CUevent_st* copy_events_[kCopyEvents] = {};
    uint64_t next_ticket_ = 1;  // 0 stands for "no copy"
    cublasContext* cublas_ = nullptr;
    void* cublas_workspace_ = nullptr;
    // Device words allocated with the backend: [0] all_finite's counter,
    // [1] and [2] check_finite's (blocks that saw a NaN or Inf, blocks done).
    static constexpr size_t kFiniteWords = 3;
    int* nonfinite_count_ = nullptr;
    std::vector<CUgraphExec_st*> graphs_;  // by the id end_capture returned
    std::vector<size_t> graph_nodes_;      // each one's node count
    DevicePool pool_;
    std::unique_ptr<CudnnConvolution> convolution_;
    std::unique_ptr<LtEpilogueGemm> epilogues_;
    // Per-chunk column sums of sum_rows, activation_bias_backward and the
    // batch-norm reductions (see backend/cuda/column_sums.cuh).
    float* column_scratch_ = nullptr;
};

std::unique_ptr<Backend> make_cuda_backend(int device);

// GPUs the CUDA runtime sees; 0 (never an exception) without a driver or GPU.
int cuda_device_count();

}  // namespace gputrain
