#include "train/memory_estimate.hpp"

#include <algorithm>
#include <cstdio>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/gemm_input_cast.hpp"
#include "nn/model.hpp"
#include "optim/optimizer.hpp"

namespace gputrain::train {

namespace {

// A CpuBackend that sizes the 16-bit GEMM copies as the CUDA backend does
// when it makes them (gemm()'s scratch, and layers' own copies) and keeps
// what the model reserves.
class GemmScratchProbe : public CpuBackend {
public:
    explicit GemmScratchProbe(bool casts) : casts_(casts) {}
    size_t gemm_scratch_bytes(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb) const override {
        return casts_ ? cast_copy_layout(trans_a, trans_b, m, n, k, lda, ldb).total_bytes : 0;
    }
    size_t gemm_copy_bytes() const override { return casts_ ? 2 : 0; }
    void reserve_gemm_scratch(size_t bytes) override { reserved = std::max(reserved, bytes); }
    size_t reserved = 0;

private:
    bool casts_;
};

}  // namespace

MemoryEstimate estimate_memory(const config::RunConfig& cfg, int64_t rows_per_replica, bool on_gpu) {
    MemoryEstimate m;
    m.rows_per_replica = std::max<int64_t>(1, rows_per_replica);
    // The same constructors a replica runs, so the numbers cannot drift from the real allocations.
    const std::string& precision = cfg.training.precision;
    GemmScratchProbe backend(on_gpu && cfg.training.cast_gemm_inputs && (precision == "bf16" || precision == "fp16"));
    const nn::Model model(cfg.model, cfg.loss, backend, m.rows_per_replica, cfg.training.seed);
    const auto optimizer = optim::make_optimizer(cfg.optimizer, backend, model.param_count());
    m.params = model.param_count();
    m.optimizer_slots = optimizer->state().size();
    m.weight_bytes = m.gradient_bytes = m.params * sizeof(float);
    m.optimizer_bytes = m.optimizer_slots * m.params * sizeof(float);
    m.activation_bytes = model.activation_floats() * sizeof(float);
    m.scratch_bytes = model.scratch_floats() * sizeof(float);
    m.workspace_bytes = model.workspace_bytes();
    m.gemm_copy_bytes = backend.reserved + model.gemm_copy_bytes();  // gemm()'s scratch, the layers' copies
    // Replica: the shard's inputs and labels, and the two running sums.
    m.input_bytes = static_cast<size_t>(m.rows_per_replica) *
                        (static_cast<size_t>(shape_elements(model.input_shape())) * sizeof(float) + sizeof(int32_t)) +
                    2 * sizeof(float);
    return m;
}

std::string human_bytes(size_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        ++unit;
    }
    char buf[32];
    if (unit == 0)
        std::snprintf(buf, sizeof buf, "%zu B", bytes);
    else
        std::snprintf(buf, sizeof buf, value < 10 ? "%.2f %s" : "%.1f %s", value, units[unit]);
    return buf;
}

}  // namespace gputrain::train
