// training.cast_gemm_inputs' scratch: before the first step, each replica's
// model reserves the largest scratch any of its GEMMs can ask for, so that no
// GEMM of training allocates (a GPU must not allocate while collectives run,
// nor while a step is recorded as a graph). Checked on the CPU with a backend
// that sizes the scratch as the CUDA backend does when it casts.
#include "backend/cpu/cpu_backend.hpp"
#include "backend/gemm_input_cast.hpp"
#include "dist/local_communicator.hpp"
#include "train/memory_estimate.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

class ScratchCheckingBackend : public CpuBackend {
public:
    size_t gemm_scratch_bytes(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb) const override {
        return cast_copy_layout(trans_a, trans_b, m, n, k, lda, ldb).total_bytes;
    }
    void reserve_gemm_scratch(size_t bytes) override {
        reserved = std::max(reserved, bytes);
        ++reservations;
        gemms_before_reserving += gemms;
    }
    void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
              float beta, float* c, int ldc) override {
        ++gemms;
        const size_t need = gemm_scratch_bytes(ta, tb, m, n, k, lda, ldb);
        largest_need = std::max(largest_need, need);
        if (need > reserved) ++unreserved;
        CpuBackend::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    size_t reserved = 0, largest_need = 0;
    int64_t reservations = 0, gemms = 0, gemms_before_reserving = 0, unreserved = 0;
};

// Bytes of a contiguous rows x cols matrix copied in 16 bits, rounded up to 256.
size_t copy_bytes(int64_t rows, int64_t cols) { return static_cast<size_t>((rows * cols * 2 + 255) / 256 * 256); }

struct DenseShape {
    int64_t in, out;
};

// The scratch to reserve for these dense layers at `rows` samples, and the
// largest that training asks for: forward x W, weight gradient x^T dz, input
// gradient dz W^T (which the first layer never computes).
std::pair<size_t, size_t> scratch_for(const std::vector<DenseShape>& dense, int64_t rows) {
    size_t reserve = 0, called = 0;
    for (size_t i = 0; i < dense.size(); ++i) {
        const auto [in, out] = dense[i];
        const size_t forward = copy_bytes(rows, in) + copy_bytes(in, out);
        const size_t weight_grad = copy_bytes(rows, in) + copy_bytes(rows, out);
        const size_t input_grad = copy_bytes(rows, out) + copy_bytes(in, out);
        reserve = std::max({reserve, forward, weight_grad, input_grad});
        called = std::max({called, forward, weight_grad, i > 0 ? input_grad : 0});
    }
    return {reserve, called};
}

// Dense layers of these widths on 6 inputs, the last one softmax.
config::RunConfig dense_job(const std::vector<int64_t>& units, int64_t batch) {
    auto cfg = fixture::small_job(2, batch);
    cfg.model.layers.clear();
    for (size_t i = 0; i < units.size(); ++i)
        cfg.model.layers.push_back(specs::layer(
            "dense", {{"units", std::to_string(units[i])}, {"activation", i + 1 < units.size() ? "relu" : "softmax"}}));
    return cfg;
}

}  // namespace

TEST_CASE("Each replica reserves its largest GEMM scratch before the first step; no GEMM of training needs more") {
    struct Job {
        const char* largest;  // which GEMM needs the most scratch
        std::vector<int64_t> units;
        int64_t batch;
    };
    // Wide enough that the 256-byte rounding does not hide a wrong size.
    const Job job = GENERATE(Job{"the first layer's input gradient (reserved, never run)", {200, 3}, 16},
                             Job{"a weight gradient", {40, 3}, 64}, Job{"an input gradient", {16, 200, 3}, 16},
                             Job{"a forward product", {64, 32, 3}, 16});
    const int replicas = GENERATE(1, 2);
    INFO(job.largest << "; " << replicas << " replica(s)");
    const auto cfg = dense_job(job.units, job.batch);
    std::vector<DenseShape> dense;
    int64_t in = 6;
    for (int64_t out : job.units) {
        dense.push_back({in, out});
        in = out;
    }
    const int64_t rows = job.batch / replicas;
    const auto [reserve, called] = scratch_for(dense, rows);
    std::vector<std::unique_ptr<train::Replica>> reps;
    auto comms = dist::make_local_communicators(replicas);
    for (int r = 0; r < replicas; ++r)
        reps.push_back(std::make_unique<train::Replica>(cfg, std::make_unique<ScratchCheckingBackend>(),
                                                        std::move(comms[r]), rows));
    data::DataSplits data;
    data.train = fixture::blobs(150, 4);  // a short last batch
    fixture::TempDir dir;
    fixture::fit(cfg, reps, data, dir.path.string());
    for (auto& r : reps) {
        auto& be = static_cast<ScratchCheckingBackend&>(r->backend());
        CHECK(be.reservations == 1);
        CHECK(be.gemms_before_reserving == 0);
        CHECK(be.gemms > 0);
        CHECK(be.reserved == reserve);
        CHECK(be.largest_need == called);
        CHECK(be.unreserved == 0);
    }
}

TEST_CASE("The memory estimate counts a GPU's 16-bit GEMM input copies only where they are made") {
    auto cfg = fixture::small_job(1, 16);
    cfg.model.layers = {specs::layer("dense", {{"units", "200"}, {"activation", "relu"}}),
                        specs::layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    const size_t reserve = scratch_for({{6, 200}, {200, 3}}, 16).first;
    const auto with = [&](const std::string& precision, bool cast, bool on_gpu) {
        cfg.training.precision = precision;
        cfg.training.cast_gemm_inputs = cast;
        return train::estimate_memory(cfg, 16, on_gpu);
    };
    CHECK(with("bf16", true, true).gemm_copy_bytes == reserve);
    CHECK(with("fp16", true, true).gemm_copy_bytes == with("bf16", true, true).gemm_copy_bytes);
    CHECK(with("bf16", true, true).total_bytes() ==
          with("bf16", false, true).total_bytes() + with("bf16", true, true).gemm_copy_bytes);
    CHECK(with("bf16", false, true).gemm_copy_bytes == 0);
    CHECK(with("tf32", true, true).gemm_copy_bytes == 0);
    CHECK(with("fp32", true, true).gemm_copy_bytes == 0);
    CHECK(with("bf16", true, false).gemm_copy_bytes == 0);
}
