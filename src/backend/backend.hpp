// Backend: everything a replica computes, on memory the backend owns. One
// Backend per replica thread (it holds that replica's stream and handles on a
// GPU). Pointers passed in are the backend's device memory unless named host_*.
// Matrices are row-major.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <typeinfo>

#include "backend/activation.hpp"
#include "backend/conv_geometry.hpp"
#include "backend/kernels.hpp"
#include "backend/math.hpp"
#include "backend/precision.hpp"
#include "core/error.hpp"

namespace gputrain {

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;  // "cpu", "cuda:0"
    // Called first on each thread that will use this backend (a GPU backend
    // makes its device current: CUDA's current device is per thread).
    virtual void bind_thread() {}
    // What gemm() computes in (training.precision). The CPU backend always
    // computes in fp32 and ignores it; docs/config.md says so.
    virtual void set_precision(Precision) {}
    // training.cast_gemm_inputs: under bf16/fp16, gemm() first rounds its
    // inputs into 16-bit copies (a kernel of its own) and multiplies those in
    // the library's native 16-bit GEMM. Ignored by the CPU and under fp32/tf32.
    virtual void set_gemm_input_cast(bool) {}
    // training.deterministic: false lets a backend pick faster kernels whose
    // sums run in a varying order (cuDNN's atomics), so results may differ
    // by rounding from run to run. The CPU's are deterministic either way.
    virtual void set_deterministic(bool) {}
    // Bytes of scratch gemm() needs for this call (the 16-bit copies above;
    // 0 when it needs none). The model reserves its layers' largest need before
    // training (reserve_gemm_scratch), so that no GEMM allocates; a GEMM whose
    // need exceeds the reservation is a bug and throws.
    virtual size_t gemm_scratch_bytes(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb) const {
        (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)lda, (void)ldb;
        return 0;
    }
    // Makes gemm()'s scratch at least `bytes` (never shrinks it).
    virtual void reserve_gemm_scratch(size_t bytes) { (void)bytes; }
    // The same 16-bit copies made by the caller, so that an operand used by
    // several GEMMs is rounded once (a dense layer keeps its input's and its
    // kernel's copies from forward to backward). gemm_copy_bytes(): bytes per
    // element of a copy when gemm() makes them, 0 when it does not (then the
    // two calls below are not to be used and throw).
    virtual size_t gemm_copy_bytes() const { return 0; }
    // copy[i] = x[i] rounded to the 16-bit type gemm() multiplies in (nearest,
    // ties to even), for i < n; `copy` holds n * gemm_copy_bytes() bytes.
    virtual void gemm_copy(const float* x, void* copy, size_t n) {
        (void)x, (void)copy, (void)n;
        throw Error(name() + ": gemm_copy: this backend makes no 16-bit copies");
    }
    // gemm() on operands that are such copies, laid out (and with the leading
    // dimensions) as gemm()'s fp32 operands would be: the same bits gemm()
    // computes from the fp32 operands. C stays fp32.
    virtual void gemm_copied(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const void* a, int lda,
                             const void* b, int ldb, float beta, float* c, int ldc) {
        (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb,
            (void)beta, (void)c, (void)ldc;
        throw Error(name() + ": gemm_copied: this backend makes no 16-bit copies");
    }
    // Throws, naming `call`, when this backend (as set now) makes no 16-bit copies.
    void require_copies(const char* call) const {
        if (gemm_copy_bytes() == 0) throw Error(name() + ": " + call + ": this backend makes no 16-bit copies");
    }

    // training.gemm_epilogues: a dense layer's GEMM with its bias add and
    // activation (forward) or its bias gradient (backward) in the GEMM's own
    // kernel. Backends without such kernels (the CPU) ignore the switch and
    // return false from both calls below.
    virtual void set_gemm_epilogues(bool) {}
    // y[m,n] = a(x[m,k] w[k,n] + bias[n]), row-major, for a = linear (bias
    // not null) or relu (bias may be null). Returns false, having queued
    // nothing, where the backend has no such kernel for these arguments: the
    // caller then runs gemm and bias_activation_forward. Unlike those, it
    // keeps no pre-activation z (relu's derivative is read from y).
    virtual bool gemm_bias_activation(Activation a, int m, int n, int k, const float* x, const float* w,
                                      const float* bias, float* y) {
        (void)a, (void)m, (void)n, (void)k, (void)x, (void)w, (void)bias, (void)y;
        return false;
    }
    // dw[k,n] = x[m,k]^T dz[m,n] and db[n] = sum over rows of dz in one call;
    // false, having queued nothing, as above (the caller runs sum_rows and gemm).
    virtual bool gemm_weight_bias_grad(int m, int n, int k, const float* x, const float* dz, float* dw, float* db) {
        (void)m, (void)n, (void)k, (void)x, (void)dz, (void)dw, (void)db;
        return false;
    }
    // The GEMM shapes the two calls above were asked for so far, and how many
    // of them the backend had a kernel for (the rest ran the plain path).
    struct EpiloguePlans {
        size_t asked = 0, taken = 0;
    };
    virtual EpiloguePlans gemm_epilogue_plans() const { return {}; }

    // Memory (bytes). Allocation happens before training starts (see
    // docs/architecture.md: no allocation while collectives run).
    virtual void* allocate_bytes(size_t bytes) = 0;
    virtual void release(void* ptr) = 0;
    virtual void copy_to_device(void* dst, const void* host_src, size_t bytes) = 0;
    virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
    virtual void copy(void* dst, const void* src, size_t bytes) = 0;
    virtual void synchronize() = 0;

    float* allocate_floats(size_t count) { return static_cast<float*>(allocate_bytes(count * sizeof(float))); }
    // False for a backend that only counts what is allocated (SizingBackend:
    // `summary`, the memory check before training): its memory cannot be
    // written, so a Model on it skips drawing its initial weights.
    virtual bool holds_data() const { return true; }

    // ---- Input batches (see docs/architecture.md, "Input copies") ----
    // Whether the backend computes on memory of its own (a GPU), so that input
    // copies can overlap compute and a resident data set saves them. The CPU:
    // false, and a Replica then copies batches exactly as it always did.
    virtual bool has_device_memory() const { return false; }
    // Device memory free now (0 without device memory).
    virtual size_t free_device_bytes() { return 0; }
    // Page-locked host memory, which a GPU copies from asynchronously (plain
    // memory on the CPU); allocated before training like the rest.
    virtual void* allocate_host_pinned(size_t bytes) = 0;
    virtual void release_host_pinned(void* host_ptr) = 0;
    // Starts copying `bytes` from pinned host memory to dst on a copy stream
    // and returns a ticket for it. The copy runs after the compute work queued
    // before the latest wait_copies() and alongside the work queued since,
    // which must not use dst. The CPU copies at once.
    virtual uint64_t copy_to_device_async(void* dst, const void* pinned_src, size_t bytes) = 0;
    // Compute work queued from now on sees every copy started so far.
    virtual void wait_copies() = 0;
    // Returns once copy `ticket` has read its host source, which may then be rewritten.
    virtual void wait_copy_on_host(uint64_t ticket) = 0;

    virtual void fill(float* x, size_t n, float value) = 0;
    virtual void scale(float* x, size_t n, float alpha) = 0;

    // C[m,n] = alpha * op(A) * op(B) + beta * C with op(A) m x k and op(B) k x n.
    virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                      const float* b, int ldb, float beta, float* c, int ldc) = 0;

    // y[r, c] += bias[c]
    virtual void add_bias(float* y, const float* bias, int rows, int cols) = 0;
    // db[c] = sum over r of dy[r, c]
    virtual void sum_rows(const float* dy, float* db, int rows, int cols) = 0;

    // Element-wise activation (not softmax). Backward takes the input x and output y.
    virtual void activation_forward(Activation a, const float* x, float* y, size_t n) = 0;
    virtual void activation_backward(Activation a, const float* x, const float* y, const float* dy, float* dx,
                                     size_t n) = 0;
    // The bias add and the activation of a dense or conv layer in one pass,
    // bit for bit what add_bias then activation_forward compute:
    // z[r, c] += bias[c] (none when bias is null), kept for the backward pass,
    // and y = a(z). z may be y: y = a(y + bias) in place, no z kept.
    // Element-wise activations only (not linear, not softmax).
    virtual void bias_activation_forward(Activation a, float* z, const float* bias, float* y, int rows,
                                         int cols) = 0;
    // Their gradients in one pass, bit for bit what activation_backward then
    // sum_rows compute: dz = dy * a'(z, y) (dz may be z or dy) and, when db is
    // not null, db[c] = sum over r of dz[r, c].
    virtual void activation_bias_backward(Activation a, const float* z, const float* y, const float* dy, float* dz,
                                          float* db, int rows, int cols) = 0;
    // bias_activation_forward that also writes y's 16-bit copy (gemm_copy's
    // rounding of y) for the GEMM of the layer that reads y next. This
    // default makes the copy after the pass; a backend may round in it.
    virtual void bias_activation_forward_copy(Activation a, float* z, const float* bias, float* y, void* y_copy,
                                              int rows, int cols) {
        require_copies("bias_activation_forward_copy");  // before the pass writes anything
        bias_activation_forward(a, z, bias, y, rows, cols);
        gemm_copy(y, y_copy, static_cast<size_t>(rows) * static_cast<size_t>(cols));
    }
    // activation_bias_backward for a layer whose GEMMs take dz as a 16-bit
    // copy (gemm_copy): dz_copy = gemm_copy of the dz it computes, db the same
    // sums of the fp32 dz. dz itself is scratch (rows x cols floats, may be z
    // or dy): a backend that rounds inside the pass leaves it unwritten; this
    // default writes it, then copies it.
    virtual void activation_bias_backward_copy(Activation a, const float* z, const float* y, const float* dy,
                                               float* dz, void* dz_copy, float* db, int rows, int cols) {
        require_copies("activation_bias_backward_copy");
        activation_bias_backward(a, z, y, dy, dz, db, rows, cols);
        gemm_copy(dz, dz_copy, static_cast<size_t>(rows) * static_cast<size_t>(cols));
    }
    // Row-wise softmax over `cols`.
    virtual void softmax_forward(const float* x, float* y, int rows, int cols) = 0;
    virtual void softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols) = 0;

    // y = x * mask / (1 - rate) with mask = hash_uniform(key, first_index + i) >= rate;
    // mask_out (n floats) keeps the scale factor or 0 for the backward pass.
    virtual void dropout_forward(const float* x, float* y, float* mask_out, size_t n, float rate, uint64_t key,
                                 uint64_t first_index) = 0;
    // The same with the key in backend memory: key_words[0] its low and
    // key_words[1] its high 32 bits (written by upload() before each step).
    virtual void dropout_forward_keyed(const float* x, float* y, float* mask_out, size_t n, float rate,
                                       const uint32_t* key_words, uint64_t first_index) = 0;
    // Whether every x[i] is finite (no NaN, no Inf). Waits for the result on the host.
    virtual bool all_finite(const float* x, size_t n) = 0;
    // The same test without waiting: `guard` (kGuardWords int32 of backend
    // memory, zeroed to start) tallies the calls in stream order, so the host
    // reads it only now and then (train/step_guard.hpp):
    //   guard[0] = 1 when this call found a NaN or Inf, else 0
    //   guard[1] = calls that found one        guard[2] = calls
    //   guard[3] = 1 + the index (guard[2] before the call) of the first that found one; 0 for none
    static constexpr size_t kGuardWords = 4;
    virtual void check_finite(const float* x, size_t n, int32_t* guard) = 0;
    // The same tally for a verdict the caller already has (a communicator
    // that noted NaN/Inf while summing).
    virtual void record_finite(int32_t* guard, bool finite) = 0;
    // x[i] *= *factor, the factor read from backend memory in stream order
    // (fp16's loss scale and its inverse, which change on the device).
    virtual void scale_by(float* x, size_t n, const float* factor) = 0;
    // math::loss_scale_update of *state from this step's verdict guard[0]
    // (check_finite's words), in stream order.
    virtual void loss_scale_update(math::LossScaleState* state, const int32_t* guard, bool sticky) = 0;
    // Copies up to kUploadBytes of host data to dst in stream order, without
    // waiting: host_src may be reused at once (the bytes travel as a kernel
    // argument on a GPU). For per-step scalars (optimizer step sizes).
    static constexpr size_t kUploadBytes = 64;
    virtual void upload(void* dst, const void* host_src, size_t bytes) = 0;
    // What a fused pass says when given linear or softmax.
    static std::string not_elementwise(const std::string& backend, const char* call, Activation a) {
        return backend + ": " + call + ": " + activation_name(a) + " is not element-wise";
    }
    // What a too-large upload says (each backend prefixes what it must).
    static std::string upload_too_large(size_t bytes) {
        return "upload: " + std::to_string(bytes) + " bytes; at most " + std::to_string(kUploadBytes) +
               " (use copy_to_device)";
    }

    // Losses over `rows` samples of `cols` classes with integer labels. Each
    // adds its loss sum to stats[0] and its number of correct argmax
    // predictions to stats[1] (stats stays on the device), and writes
    // d(loss sum)/d(input) * grad_scale into grad (if not null).
    // From logits: softmax + cross-entropy, fused and stable. `smoothing`:
    // label smoothing in [0, 1) (math::smoothed_target; 0: the one-hot label).
    virtual void softmax_cross_entropy(const float* logits, const int32_t* labels, int rows, int cols,
                                       float grad_scale, float* grad, float* stats, float smoothing) = 0;
    // From probabilities (clipped to [eps, 1 - eps], Keras' epsilon 1e-7).
    virtual void cross_entropy_probs(const float* probs, const int32_t* labels, int rows, int cols, float grad_scale,
                                     float* grad, float* stats, float smoothing) = 0;
    // Mean squared error against the one-hot label, averaged over cols.
    virtual void mean_squared_error(const float* y, const int32_t* labels, int rows, int cols, float grad_scale,
                                    float* grad, float* stats) = 0;
    // A regression loss over `rows` samples of `cols` outputs against `cols`
    // real-valued targets each (math::regression_term: the row's loss is the
    // mean over cols). Adds the loss sum to stats[0] and the sum of the rows'
    // `metric` (mean absolute or squared error) to stats[1]; writes
    // d(loss sum)/d(y) * grad_scale into grad (if not null).
    virtual void regression_loss(const float* y, const float* targets, int rows, int cols, math::RegressionLoss kind,
                                 float delta, math::RegressionMetric metric, float grad_scale, float* grad,
                                 float* stats) = 0;

    // ---- Convolution and pooling (NHWC; see conv_geometry.hpp) ----
    // Filters are [out_c, kernel_h, kernel_w, in_c] (cuDNN's NHWC filter
    // layout, "KRSC"). No bias here: the layer adds it with add_bias.
    // Bytes of scratch the three conv calls need for geometry `g` (g.batch the
    // most samples a call will see); the caller allocates it once before
    // training and passes it to every call with a batch <= g.batch.
    virtual size_t conv2d_workspace_bytes(const Conv2dGeometry& g) = 0;
    virtual void conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w, float* y, void* workspace,
                                size_t workspace_bytes) = 0;
    // dx = d(loss)/dx (overwritten).
    virtual void conv2d_backward_data(const Conv2dGeometry& g, const float* dy, const float* w, float* dx,
                                      void* workspace, size_t workspace_bytes) = 0;
    // dw = d(loss)/dw (overwritten).
    virtual void conv2d_backward_filter(const Conv2dGeometry& g, const float* x, const float* dy, float* dw,
                                        void* workspace, size_t workspace_bytes) = 0;
    virtual void pool2d_forward(const Pool2dGeometry& g, const float* x, float* y) = 0;
    // dx overwritten. Max pooling routes each dy to the first maximum of its window.
    virtual void pool2d_backward(const Pool2dGeometry& g, const float* x, const float* y, const float* dy,
                                 float* dx) = 0;

    // ---- Batch normalization over a [rows, channels] matrix (NHWC flattened:
    // rows = samples * height * width). Statistics arrays hold 2*channels floats.
    // Sums around a shift (C floats, or null for 0): sums[c] = sum of
    // x[:, c] - shift[c], sums[C + c] = sum of (x[:, c] - shift[c])^2 over
    // these rows (overwritten). A shift near the mean keeps the variance
    // E[d^2] - E[d]^2 from cancelling when the mean is large against the spread.
    virtual void batch_norm_sums(const float* x, int rows, int channels, const float* shift, float* sums) = 0;
    // From `sums` over `count` rows (count may be the global batch after an
    // all-reduce) around the same shift: mean_invstd[c] = mean,
    // mean_invstd[C + c] = 1/sqrt(var + eps) (biased variance); when
    // moving_mean is not null, also moving = momentum * moving + (1 - momentum)
    // * batch value, where the moving variance takes the unbiased variance
    // (count / (count - 1)). `shift` may be moving_mean itself (each
    // channel's shift is read before its moving mean is updated).
    virtual void batch_norm_finalize(const float* sums, float count, int channels, float eps, float momentum,
                                     const float* shift, float* mean_invstd, float* moving_mean,
                                     float* moving_var) = 0;
    // y = gamma * (x - mean) * invstd + beta.
    virtual void batch_norm_apply(const float* x, const float* mean_invstd, const float* gamma, const float* beta,
                                  float* y, int rows, int channels) = 0;
    // y = gamma * (x - moving_mean) / sqrt(moving_var + eps) + beta (evaluation).
    virtual void batch_norm_inference(const float* x, const float* moving_mean, const float* moving_var, float eps,
                                      const float* gamma, const float* beta, float* y, int rows, int channels) = 0;
    // sums[c] = sum of dy[:, c], sums[C + c] = sum of dy[:, c] * xhat[:, c]
    // with xhat = (x - mean) * invstd (overwritten). These are also dbeta and dgamma.
    virtual void batch_norm_backward_sums(const float* x, const float* dy, const float* mean_invstd, int rows,
                                          int channels, float* sums) = 0;
    // dx = gamma * invstd * (dy - sums[c] / count - xhat * sums[C + c] / count)
    // with `sums` and `count` over the same rows the statistics came from.
    virtual void batch_norm_backward_data(const float* x, const float* dy, const float* mean_invstd,
                                          const float* gamma, const float* sums, float count, float* dx, int rows,
                                          int channels) = 0;

    // Fused optimizer steps over flat buffers.
    virtual void adam_step(float* params, const float* grads, float* m, float* v, size_t n,
                           const math::AdamParams& a) = 0;
    virtual void sgd_step(float* params, const float* grads, float* velocity, size_t n,
                          const math::SgdParams& s) = 0;
    // The same updates with their scalars in backend memory (one AdamParams or
    // SgdParams written by upload()), so that a replayed graph takes each
    // step's values; nothing changes when `skip` is not null and *skip != 0
    // (a step whose gradients were not finite: see check_finite).
    virtual void adam_step_guarded(float* params, const float* grads, float* m, float* v, size_t n,
                                   const math::AdamParams* a, const int32_t* skip) = 0;
    virtual void sgd_step_guarded(float* params, const float* grads, float* velocity, size_t n,
                                  const math::SgdParams* s, const int32_t* skip) = 0;

    // ---- Ops outside this interface (backend/kernels.hpp; run them with run_op) ----
    // This backend's kernels for them.
    virtual const KernelTable& kernels() const = 0;
    // Runs `kernel` on `op` (op_bytes of a trivially copyable struct) in
    // stream order: at once on the CPU, launched on its stream by a GPU.
    virtual void queue(KernelTable::Fn kernel, const void* op, size_t op_bytes) {
        (void)op_bytes;
        kernel(*this, op);
    }

    // ---- Graphs: the work of a step recorded once and replayed ----
    // Whether this backend can record what it queues (CUDA graphs on a GPU).
    virtual bool can_capture() const { return false; }
    // From begin_capture to end_capture nothing runs: the work queued on this
    // backend (and on streams that join it, such as NCCL's) is recorded.
    // end_capture returns the graph's id for replay(), or throws Error naming
    // what could not be recorded (then none of that work ran).
    virtual void begin_capture() { throw Error(name() + ": cannot record graphs"); }
    virtual int end_capture() { throw Error(name() + ": cannot record graphs"); }
    // Queues the recorded work again, in stream order.
    virtual void replay(int /*graph*/) { throw Error(name() + ": cannot record graphs"); }
    // How many operations (kernels, copies, memsets) a recorded graph holds.
    virtual size_t graph_nodes(int /*graph*/) const { return 0; }
};

// Queues op `op` (a struct of backend/ops/) on `backend`, by the backend's
// kernel for it; Error when the backend has none.
template <typename Op>
void run_op(Backend& backend, const Op& op) {
    static_assert(std::is_trivially_copyable_v<Op>, "an op is a struct of pointers and sizes");
    const KernelTable::Fn kernel = backend.kernels().find(typeid(Op));
    if (!kernel) throw Error(backend.name() + ": no kernel for op '" + Op::kName + "'");
    backend.queue(kernel, &op, sizeof op);
}

}  // namespace gputrain
