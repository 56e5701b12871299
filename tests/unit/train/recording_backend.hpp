// RecordingBackend: a CpuBackend that records graphs the way CUDA stream
// capture does, so that the trainer's graph path runs on the CPU. Between
// begin_capture and end_capture a compute call is not run but kept, with its
// arguments as they are then (pointers and values: what a CUDA graph's kernel
// nodes keep); replay runs the kept calls again, reading memory as it is at
// replay. A call that waits for results on the host (copies to or from host
// memory, all_finite, allocation) fails while recording and spoils the
// recording, as it does under CUDA. Any per-step value that a step passed as
// an argument instead of through memory would be replayed stale, and the
// weights would differ from a direct run: tests/unit/train/test_graph_replay.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/gemm_input_cast.hpp"
#include "core/error.hpp"

namespace fixture {

class RecordingBackend : public gputrain::CpuBackend {
public:
    using Activation = gputrain::Activation;
    using Conv2dGeometry = gputrain::Conv2dGeometry;
    using Pool2dGeometry = gputrain::Pool2dGeometry;
    using AdamParams = gputrain::math::AdamParams;
    using SgdParams = gputrain::math::SgdParams;

    // device_memory: behave like a GPU for the replica (copies staged one step
    // ahead into two buffers used in turn, a data set made resident by copying
    // it), all still in host memory and done at once.
    explicit RecordingBackend(bool device_memory = false) : device_memory_(device_memory) {}
    bool has_device_memory() const override { return device_memory_; }
    size_t free_device_bytes() override { return device_memory_ ? size_t{1} << 30 : 0; }

    bool can_capture() const override { return true; }
    void begin_capture() override {
        recording_ = true;
        spoiled_ = false;
        ops_.clear();
    }
    int end_capture() override {
        recording_ = false;
        if (spoiled_) throw gputrain::Error("cpu: the work could not be recorded (a call waited while recording)");
        graphs_.push_back(std::move(ops_));
        ops_.clear();
        return static_cast<int>(graphs_.size() - 1);
    }
    void replay(int graph) override {
        for (const auto& op : graphs_.at(static_cast<size_t>(graph))) op();
        ++replays;
    }
    size_t graph_nodes(int graph) const override { return graphs_.at(static_cast<size_t>(graph)).size(); }
    int64_t replays = 0;

    // Calls that wait on the host: not allowed while recording.
    void* allocate_bytes(size_t bytes) override {
        refuse();
        return CpuBackend::allocate_bytes(bytes);
    }
    void copy_to_device(void* dst, const void* src, size_t bytes) override {
        refuse();
        CpuBackend::copy_to_device(dst, src, bytes);
    }
    void copy_to_host(void* dst, const void* src, size_t bytes) override {
        refuse();
        CpuBackend::copy_to_host(dst, src, bytes);
    }
    bool all_finite(const float* x, size_t n) override {
        refuse();
        return CpuBackend::all_finite(x, n);
    }
    void upload(void* dst, const void* src, size_t bytes) override {
        if (!recording_) return CpuBackend::upload(dst, src, bytes);
        std::vector<unsigned char> bytes_now(static_cast<const unsigned char*>(src),
                                             static_cast<const unsigned char*>(src) + bytes);
        ops_.push_back([this, dst, bytes_now] { CpuBackend::upload(dst, bytes_now.data(), bytes_now.size()); });
    }

// Recorded while recording, run at once otherwise.
#define GPUTRAIN_RECORDED(call)                                    \
    do {                                                           \
        if (recording_) {                                          \
            ops_.push_back([=, this] { CpuBackend::call; });       \
            return;                                                \
        }                                                          \
        CpuBackend::call;                                          \
    } while (0)

    void copy(void* dst, const void* src, size_t bytes) override { GPUTRAIN_RECORDED(copy(dst, src, bytes)); }
    void fill(float* x, size_t n, float value) override { GPUTRAIN_RECORDED(fill(x, n, value)); }
    // Ops outside the Backend interface (backend/kernels.hpp): the op's bytes are kept.
    void queue(gputrain::KernelTable::Fn kernel, const void* op, size_t op_bytes) override {
        if (!recording_) return kernel(*this, op);
        std::vector<unsigned char> op_now(static_cast<const unsigned char*>(op),
                                          static_cast<const unsigned char*>(op) + op_bytes);
        ops_.push_back([this, kernel, op_now] { kernel(*this, op_now.data()); });
    }
    void scale(float* x, size_t n, float alpha) override { GPUTRAIN_RECORDED(scale(x, n, alpha)); }
    void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
              float beta, float* c, int ldc) override {
        if (rounds_) {  // as a GPU's gemm() under the cast: round both operands, then multiply
            ++plain_gemms;
            const gputrain::CastCopyLayout l = gputrain::cast_copy_layout(ta, tb, m, n, k, lda, ldb);
            if (l.total_bytes > reserved_) throw gputrain::Error("cpu: gemm() without its scratch reserved");
            largest_scratch_need = std::max(largest_scratch_need, l.total_bytes);
            run_or_record([=, this] {
                const std::vector<float> a16 = widened(rounded(a, l.a_elements)), b16 = widened(rounded(b, l.b_elements));
                CpuBackend::gemm(ta, tb, m, n, k, alpha, a16.data(), lda, b16.data(), ldb, beta, c, ldc);
            });
            return;
        }
        GPUTRAIN_RECORDED(gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
    }
    // bf16 (or fp16) GEMMs as a GPU computes them under
    // training.cast_gemm_inputs, emulated: gemm() rounds its operands to 16
    // bits (nearest, ties to even; fp16 overflows to infinity) before the
    // CPU's fp32 product; with `copies` the backend also offers
    // Backend::gemm_copy (the 16-bit bits in 2 bytes) and gemm_copied (widens
    // them and multiplies), so layers keep copies of their own. Either way the
    // products are of the same rounded numbers.
    void set_bf16_gemm(bool rounds, bool copies, bool fp16 = false) {
        rounds_ = rounds;
        copies_ = rounds && copies;
        fp16_ = fp16;
    }
    size_t gemm_scratch_bytes(bool ta, bool tb, int m, int n, int k, int lda, int ldb) const override {
        return rounds_ ? gputrain::cast_copy_layout(ta, tb, m, n, k, lda, ldb).total_bytes : 0;
    }
    void reserve_gemm_scratch(size_t bytes) override {
        reserved_ = std::max(reserved_, bytes);
        ++scratch_reservations;
        gemms_before_reserving += plain_gemms;
    }
    size_t reserved_gemm_scratch() const { return reserved_; }
    size_t gemm_copy_bytes() const override { return copies_ ? 2 : 0; }
    void gemm_copy(const float* x, void* copy, size_t n) override {
        if (!copies_) return Backend::gemm_copy(x, copy, n);
        ++copies_made;
        copy_elements += static_cast<int64_t>(n);
        run_or_record([=, this] {
            const std::vector<uint16_t> bits = rounded(x, n);
            std::memcpy(copy, bits.data(), n * sizeof(uint16_t));
        });
    }
    void gemm_copied(bool ta, bool tb, int m, int n, int k, float alpha, const void* a, int lda, const void* b, int ldb,
                     float beta, float* c, int ldc) override {
        if (!copies_) return Backend::gemm_copied(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        ++copied_gemms;
        const gputrain::CastCopyLayout l = gputrain::cast_copy_layout(ta, tb, m, n, k, lda, ldb);
        run_or_record([=, this] {
            const std::vector<float> a32 = widened(static_cast<const uint16_t*>(a), l.a_elements);
            const std::vector<float> b32 = widened(static_cast<const uint16_t*>(b), l.b_elements);
            CpuBackend::gemm(ta, tb, m, n, k, alpha, a32.data(), lda, b32.data(), ldb, beta, c, ldc);
        });
    }
    // As a GPU fuses it: y and its copy from one pass.
    void bias_activation_forward_copy(Activation a, float* z, const float* bias, float* y, void* y_copy, int rows,
                                      int cols) override {
        if (!copies_) return Backend::bias_activation_forward_copy(a, z, bias, y, y_copy, rows, cols);
        const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
        ++copies_made;
        ++fused_copies;
        copy_elements += static_cast<int64_t>(n);
        run_or_record([=, this] {
            CpuBackend::bias_activation_forward(a, z, bias, y, rows, cols);
            const std::vector<uint16_t> bits = rounded(y, n);
            std::memcpy(y_copy, bits.data(), n * sizeof(uint16_t));
        });
    }
    // As a GPU fuses it: dz's copy and db from one pass, dz itself not
    // written (here filled with NaN, so that a layer reading it would show).
    void activation_bias_backward_copy(Activation a, const float* z, const float* y, const float* dy, float* dz,
                                       void* dz_copy, float* db, int rows, int cols) override {
        if (!copies_) return Backend::activation_bias_backward_copy(a, z, y, dy, dz, dz_copy, db, rows, cols);
        const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
        ++copies_made;
        ++fused_copies;
        copy_elements += static_cast<int64_t>(n);
        run_or_record([=, this] {
            std::vector<float> d(n);
            CpuBackend::activation_bias_backward(a, z, y, dy, d.data(), db, rows, cols);
            const std::vector<uint16_t> bits = rounded(d.data(), n);
            std::memcpy(dz_copy, bits.data(), n * sizeof(uint16_t));
            std::fill(dz, dz + n, std::numeric_limits<float>::quiet_NaN());
        });
    }
    // Under set_bf16_gemm: GEMMs by gemm() and by gemm_copied, copies made
    // (fused_copies of them in activation_bias_backward_copy) and their elements.
    int64_t plain_gemms = 0, copied_gemms = 0, copies_made = 0, fused_copies = 0, copy_elements = 0;
    // gemm()'s scratch: reservations, gemm() calls made before one, the largest need met.
    int64_t scratch_reservations = 0, gemms_before_reserving = 0;
    size_t largest_scratch_need = 0;
    void add_bias(float* y, const float* bias, int rows, int cols) override {
        GPUTRAIN_RECORDED(add_bias(y, bias, rows, cols));
    }
    // training.gemm_epilogues as a GPU offers them (lt_epilogue_gemm.hpp):
    // each is one recorded call, run as the plain calls it stands for. Like
    // the GPU's, the forward one writes y alone, never the layer's z.
    void set_gemm_epilogues(bool on) override { epilogues_ = on; }
    bool gemm_bias_activation(Activation a, int m, int n, int k, const float* x, const float* w, const float* bias,
                              float* y) override {
        if (!epilogues_ || !(a == Activation::relu || (a == Activation::linear && bias))) return false;
        run_or_record([=, this] {
            CpuBackend::gemm(false, false, m, n, k, 1.0f, x, k, w, n, 0.0f, y, n);
            if (bias) CpuBackend::add_bias(y, bias, m, n);
            if (a == Activation::relu) CpuBackend::activation_forward(a, y, y, static_cast<size_t>(m) * n);
        });
        ++epilogue_calls;
        return true;
    }
    bool gemm_weight_bias_grad(int m, int n, int k, const float* x, const float* dz, float* dw, float* db) override {
        if (!epilogues_) return false;
        run_or_record([=, this] {
            CpuBackend::sum_rows(dz, db, m, n);
            CpuBackend::gemm(true, false, k, n, m, 1.0f, x, k, dz, n, 0.0f, dw, n);
        });
        ++epilogue_calls;
        return true;
    }
    int64_t epilogue_calls = 0;  // gemm_bias_activation and gemm_weight_bias_grad calls taken
    void sum_rows(const float* dy, float* db, int rows, int cols) override {
        GPUTRAIN_RECORDED(sum_rows(dy, db, rows, cols));
    }
    void activation_forward(Activation a, const float* x, float* y, size_t n) override {
        GPUTRAIN_RECORDED(activation_forward(a, x, y, n));
    }
    void activation_backward(Activation a, const float* x, const float* y, const float* dy, float* dx,
                             size_t n) override {
        GPUTRAIN_RECORDED(activation_backward(a, x, y, dy, dx, n));
    }
    void bias_activation_forward(Activation a, float* z, const float* bias, float* y, int rows, int cols) override {
        GPUTRAIN_RECORDED(bias_activation_forward(a, z, bias, y, rows, cols));
    }
    void activation_bias_backward(Activation a, const float* z, const float* y, const float* dy, float* dz, float* db,
                                  int rows, int cols) override {
        GPUTRAIN_RECORDED(activation_bias_backward(a, z, y, dy, dz, db, rows, cols));
    }
    void softmax_forward(const float* x, float* y, int rows, int cols) override {
        GPUTRAIN_RECORDED(softmax_forward(x, y, rows, cols));
    }
    void softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols) override {
        GPUTRAIN_RECORDED(softmax_backward(y, dy, dx, rows, cols));
    }
    void dropout_forward(const float* x, float* y, float* mask, size_t n, float rate, uint64_t key,
                         uint64_t first) override {
        GPUTRAIN_RECORDED(dropout_forward(x, y, mask, n, rate, key, first));
    }
    void dropout_forward_keyed(const float* x, float* y, float* mask, size_t n, float rate, const uint32_t* key,
                               uint64_t first) override {
        GPUTRAIN_RECORDED(dropout_forward_keyed(x, y, mask, n, rate, key, first));
    }
    void check_finite(const float* x, size_t n, int32_t* guard) override { GPUTRAIN_RECORDED(check_finite(x, n, guard)); }
    void record_finite(int32_t* guard, bool finite) override { GPUTRAIN_RECORDED(record_finite(guard, finite)); }
    void scale_by(float* x, size_t n, const float* factor) override { GPUTRAIN_RECORDED(scale_by(x, n, factor)); }
    void loss_scale_update(gputrain::math::LossScaleState* state, const int32_t* guard, bool sticky) override {
        GPUTRAIN_RECORDED(loss_scale_update(state, guard, sticky));
    }
    void softmax_cross_entropy(const float* logits, const int32_t* labels, int rows, int cols, float scale,
                               float* grad, float* stats, float smoothing) override {
        GPUTRAIN_RECORDED(softmax_cross_entropy(logits, labels, rows, cols, scale, grad, stats, smoothing));
    }
    void cross_entropy_probs(const float* probs, const int32_t* labels, int rows, int cols, float scale, float* grad,
                             float* stats, float smoothing) override {
        GPUTRAIN_RECORDED(cross_entropy_probs(probs, labels, rows, cols, scale, grad, stats, smoothing));
    }
    void mean_squared_error(const float* y, const int32_t* labels, int rows, int cols, float scale, float* grad,
                            float* stats) override {
        GPUTRAIN_RECORDED(mean_squared_error(y, labels, rows, cols, scale, grad, stats));
    }
    void regression_loss(const float* y, const float* targets, int rows, int cols, gputrain::math::RegressionLoss kind,
                         float delta, gputrain::math::RegressionMetric metric, float scale, float* grad,
                         float* stats) override {
        GPUTRAIN_RECORDED(regression_loss(y, targets, rows, cols, kind, delta, metric, scale, grad, stats));
    }
    void conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w, float* y, void* ws,
                        size_t ws_bytes) override {
        GPUTRAIN_RECORDED(conv2d_forward(g, x, w, y, ws, ws_bytes));
    }
    void conv2d_backward_data(const Conv2dGeometry& g, const float* dy, const float* w, float* dx, void* ws,
                              size_t ws_bytes) override {
        GPUTRAIN_RECORDED(conv2d_backward_data(g, dy, w, dx, ws, ws_bytes));
    }
    void conv2d_backward_filter(const Conv2dGeometry& g, const float* x, const float* dy, float* dw, void* ws,
                                size_t ws_bytes) override {
        GPUTRAIN_RECORDED(conv2d_backward_filter(g, x, dy, dw, ws, ws_bytes));
    }
    void pool2d_forward(const Pool2dGeometry& g, const float* x, float* y) override {
        GPUTRAIN_RECORDED(pool2d_forward(g, x, y));
    }
    void pool2d_backward(const Pool2dGeometry& g, const float* x, const float* y, const float* dy,
                         float* dx) override {
        GPUTRAIN_RECORDED(pool2d_backward(g, x, y, dy, dx));
    }
    void batch_norm_sums(const float* x, int rows, int channels, const float* shift, float* sums) override {
        GPUTRAIN_RECORDED(batch_norm_sums(x, rows, channels, shift, sums));
    }
    void batch_norm_finalize(const float* sums, float count, int channels, float eps, float momentum,
                             const float* shift, float* mean_invstd, float* moving_mean, float* moving_var) override {
        GPUTRAIN_RECORDED(
            batch_norm_finalize(sums, count, channels, eps, momentum, shift, mean_invstd, moving_mean, moving_var));
    }
    void batch_norm_apply(const float* x, const float* mean_invstd, const float* gamma, const float* beta, float* y,
                          int rows, int channels) override {
        GPUTRAIN_RECORDED(batch_norm_apply(x, mean_invstd, gamma, beta, y, rows, channels));
    }
    void batch_norm_backward_sums(const float* x, const float* dy, const float* mean_invstd, int rows, int channels,
                                  float* sums) override {
        GPUTRAIN_RECORDED(batch_norm_backward_sums(x, dy, mean_invstd, rows, channels, sums));
    }
    void batch_norm_backward_data(const float* x, const float* dy, const float* mean_invstd, const float* gamma,
                                  const float* sums, float count, float* dx, int rows, int channels) override {
        GPUTRAIN_RECORDED(batch_norm_backward_data(x, dy, mean_invstd, gamma, sums, count, dx, rows, channels));
    }
    void batch_norm_inference(const float* x, const float* moving_mean, const float* moving_var, float eps,
                              const float* gamma, const float* beta, float* y, int rows, int channels) override {
        GPUTRAIN_RECORDED(batch_norm_inference(x, moving_mean, moving_var, eps, gamma, beta, y, rows, channels));
    }
    void adam_step(float* p, const float* g, float* m, float* v, size_t n, const AdamParams& a) override {
        GPUTRAIN_RECORDED(adam_step(p, g, m, v, n, a));
    }
    void sgd_step(float* p, const float* g, float* velocity, size_t n, const SgdParams& s) override {
        GPUTRAIN_RECORDED(sgd_step(p, g, velocity, n, s));
    }
    void adam_step_guarded(float* p, const float* g, float* m, float* v, size_t n, const AdamParams* a,
                           const int32_t* skip) override {
        GPUTRAIN_RECORDED(adam_step_guarded(p, g, m, v, n, a, skip));
    }
    void sgd_step_guarded(float* p, const float* g, float* velocity, size_t n, const SgdParams* s,
                          const int32_t* skip) override {
        GPUTRAIN_RECORDED(sgd_step_guarded(p, g, velocity, n, s, skip));
    }
#undef GPUTRAIN_RECORDED

private:
    // 16-bit bits of each float: bf16, the upper half after rounding to
    // nearest, ties to even (finite inputs); fp16, the compiler's _Float16.
    std::vector<uint16_t> rounded(const float* x, size_t n) const {
        std::vector<uint16_t> out(n);
        for (size_t i = 0; i < n; ++i) {
            if (fp16_) {
                const _Float16 h = static_cast<_Float16>(x[i]);
                std::memcpy(&out[i], &h, sizeof h);
                continue;
            }
            uint32_t u;
            std::memcpy(&u, &x[i], sizeof u);
            u += 0x7FFFu + ((u >> 16) & 1u);
            out[i] = static_cast<uint16_t>(u >> 16);
        }
        return out;
    }
    std::vector<float> widened(const uint16_t* bits, size_t n) const {
        std::vector<float> out(n);
        for (size_t i = 0; i < n; ++i) {
            if (fp16_) {
                _Float16 h;
                std::memcpy(&h, &bits[i], sizeof h);
                out[i] = static_cast<float>(h);
                continue;
            }
            const uint32_t u = static_cast<uint32_t>(bits[i]) << 16;
            std::memcpy(&out[i], &u, sizeof u);
        }
        return out;
    }
    std::vector<float> widened(const std::vector<uint16_t>& bits) const { return widened(bits.data(), bits.size()); }

    void refuse() {
        if (!recording_) return;
        spoiled_ = true;
        throw gputrain::Error("cpu: a call that waits on the host, while recording");
    }
    void run_or_record(std::function<void()> op) {
        if (recording_)
            ops_.push_back(std::move(op));
        else
            op();
    }

    bool device_memory_;
    bool epilogues_ = false;
    bool rounds_ = false, copies_ = false, fp16_ = false;
    size_t reserved_ = 0;
    bool recording_ = false;
    bool spoiled_ = false;
    std::vector<std::function<void()>> ops_;
    std::vector<std::vector<std::function<void()>>> graphs_;
};

}  // namespace fixture
