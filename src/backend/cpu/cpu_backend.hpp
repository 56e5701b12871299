// CpuBackend: the Backend on host memory; GEMM through OpenBLAS (one BLAS
// thread per replica thread unless told otherwise) except the small shapes
// cpu_small_gemm.hpp handles faster, element-wise loops the compiler vectorizes.
#pragma once

#include <memory>

#include "backend/backend.hpp"
#include "backend/cpu/onednn_conv.hpp"

namespace gputrain {

class CpuBackend : public Backend {
public:
    std::string name() const override { return "cpu"; }
    // Flushes denormals to zero on the calling thread (cpu_flush_denormals.cpp).
    void bind_thread() override;

    void* allocate_bytes(size_t bytes) override;
    void release(void* ptr) override;
    void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
    void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
    void copy(void* dst, const void* src, size_t bytes) override;
    void synchronize() override {}
    // Batches: plain memory and plain copies (the CPU has no device memory).
    void* allocate_host_pinned(size_t bytes) override { return allocate_bytes(bytes); }
    void release_host_pinned(void* host_ptr) override { release(host_ptr); }
    uint64_t copy_to_device_async(void* dst, const void* pinned_src, size_t bytes) override;
    void wait_copies() override {}
    void wait_copy_on_host(uint64_t) override {}

    void fill(float* x, size_t n, float value) override;
    void scale(float* x, size_t n, float alpha) override;
    void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
              int ldb, float beta, float* c, int ldc) override;
    void add_bias(float* y, const float* bias, int rows, int cols) override;
    void sum_rows(const float* dy, float* db, int rows, int cols) override;
    // Element-wise activations, plain and fused with the bias (cpu_activation.cpp).
    void activation_forward(Activation a, const float* x, float* y, size_t n) override;
    void activation_backward(Activation a, const float* x, const float* y, const float* dy, float* dx,
                             size_t n) override;
    void bias_activation_forward(Activation a, float* z, const float* bias, float* y, int rows, int cols) override;
    void activation_bias_backward(Activation a, const float* z, const float* y, const float* dy, float* dz,
                                  float* db, int rows, int cols) override;
    void softmax_forward(const float* x, float* y, int rows, int cols) override;
    void softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols) override;
    void dropout_forward(const float* x, float* y, float* mask_out, size_t n, float rate, uint64_t key,
                         uint64_t first_index) override;
    void dropout_forward_keyed(const float* x, float* y, float* mask_out, size_t n, float rate,
                               const uint32_t* key_words, uint64_t first_index) override {
        dropout_forward(x, y, mask_out, n, rate, math::join_key_words(key_words), first_index);
    }
    const KernelTable& kernels() const override;
    bool all_finite(const float* x, size_t n) override;  // cpu_finite.cpp
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

    // Convolution via im2col + GEMM (cpu_conv.cpp), pooling (cpu_pool.cpp),
    // batch normalization (cpu_batch_norm.cpp).
    // Which code runs the convolutions (onednn_conv.hpp); the default comes
    // from GPUTRAIN_CPU_CONV. The tests run both.
    void set_conv_path(CpuConvPath path) { conv_path_ = path; }
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

private:
    OneDnnConvolutions& onednn();  // made at the first convolution
    bool use_onednn(const Conv2dGeometry& g);
    std::unique_ptr<OneDnnConvolutions> onednn_;
    CpuConvPath conv_path_ = cpu_conv_path_from_environment();
    bool gemm_onednn_ = cpu_gemm_uses_onednn();
};

#if defined(__SANITIZE_THREAD__)
#define GPUTRAIN_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GPUTRAIN_THREAD_SANITIZER 1
#endif
#endif
#ifndef GPUTRAIN_THREAD_SANITIZER
#define GPUTRAIN_THREAD_SANITIZER 0
#endif

// ThreadSanitizer builds keep OpenBLAS on the calling thread (issue 24).
// OpenBLAS is not instrumented: TSan sees its workers' writes only where they
// go through an intercepted libc call (the AVX-512 kernels' sgemm_beta zeroes
// C with memset), but not OpenBLAS's own hand-off back to the caller (a flag
// the caller spins on, behind memory barriers), so reading a GEMM's result
// after cblas_sgemm returned was reported as a race. With one BLAS thread every
// access TSan sees is in the order it has, and nothing about OpenBLAS needs a
// suppression.
inline constexpr bool kBlasOnCallingThread = GPUTRAIN_THREAD_SANITIZER;

// Threads OpenBLAS may use inside one GEMM call (process-wide setting); one
// when kBlasOnCallingThread.
void set_cpu_blas_threads(int threads);

// FTZ and DAZ on the calling thread (bind_thread does this for a replica's
// thread; set_cpu_blas_threads for the OpenBLAS workers it starts).
void flush_denormals_on_this_thread();

}  // namespace gputrain
