// training.cast_gemm_inputs on the CPU: the recording backend emulates a GPU's
// bf16 GEMMs (operands rounded to bf16, products in fp32), either inside
// gemm() or through the 16-bit copies of Backend::gemm_copy that dense layers
// keep (x's and the kernel's from forward to backward, dz's for both backward
// GEMMs). The two must train to the same weights bit for bit, directly and as
// replayed graphs, with each operand rounded once a step; the copies and
// gemm()'s own scratch must be in place before the first step (a GPU must not
// allocate while a step is recorded or collectives run), and the memory
// estimate must count them. tests/gpu/test_cuda_gemm.cpp checks the CUDA
// backend's copies against its gemm() on the GPU.
#include "backend/gemm_input_cast.hpp"
#include "dist/local_communicator.hpp"
#include "nn/model.hpp"
#include "recording_backend.hpp"
#include "train/memory_estimate.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

// Bytes of a contiguous rows x cols matrix copied in 16 bits, rounded up to 256.
size_t copy_bytes(int64_t rows, int64_t cols) { return static_cast<size_t>((rows * cols * 2 + 255) / 256 * 256); }

// Dense layers of these widths on 6 inputs, the last one softmax.
config::RunConfig dense_job(const std::vector<int64_t>& units, int64_t batch) {
    auto cfg = fixture::small_job(2, batch);
    cfg.model.layers.clear();
    for (size_t i = 0; i < units.size(); ++i)
        cfg.model.layers.push_back(specs::layer(
            "dense", {{"units", std::to_string(units[i])}, {"activation", i + 1 < units.size() ? "relu" : "softmax"}}));
    return cfg;
}

// fp16 when the config says so (its loss scaling then runs too).
std::vector<std::unique_ptr<train::Replica>> bf16_replicas(const config::RunConfig& cfg, int count, bool copies) {
    std::vector<std::unique_ptr<train::Replica>> out;
    auto comms = dist::make_local_communicators(count);
    const int64_t rows = (cfg.training.batch_size + count - 1) / count;
    for (int r = 0; r < count; ++r) {
        auto backend = std::make_unique<fixture::RecordingBackend>();
        backend->set_bf16_gemm(true, copies, cfg.training.precision == config::Precision::fp16);
        out.push_back(std::make_unique<train::Replica>(cfg, std::move(backend), std::move(comms[r]), rows));
    }
    return out;
}

fixture::RecordingBackend& recording(train::Replica& r) { return static_cast<fixture::RecordingBackend&>(r.backend()); }

}  // namespace

TEST_CASE("Dense layers' own 16-bit copies train to the weights of gemm() rounding its operands, bit for bit") {
    const bool graphs = GENERATE(false, true);
    const int replicas = GENERATE(1, 2);
    const bool fused = GENERATE(true, false);  // dz's copy made in the gradient pass, or after it
    const config::Precision precision = GENERATE(config::Precision::bf16, config::Precision::fp16);
    INFO("training.cuda_graphs " << graphs << ", " << replicas << " replica(s), fused_kernels " << fused << ", "
                                 << config::name_of(precision));
    using specs::layer;
    auto cfg = fixture::small_job(2, 16);
    // relu, linear without bias, gelu, a dropout between, the softmax output.
    cfg.model.layers = {layer("dense", {{"units", "24"}, {"activation", "relu"}}),
                        layer("dense", {{"units", "12"}, {"use_bias", "false"}}),
                        layer("dense", {{"units", "8"}, {"activation", "gelu"}}),
                        layer("dropout", {{"rate", "0.25"}}),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    cfg.training.cuda_graphs = graphs;
    cfg.training.fused_kernels = fused;
    cfg.training.precision = precision;
    data::DataSplits data;
    data.train = fixture::blobs(150, 4);  // 9 full steps and one of 6 an epoch
    data.validation = fixture::blobs(40, 9);
    fixture::TempDir rounding_dir, copies_dir, fp32_dir;
    auto rounding = bf16_replicas(cfg, replicas, false);
    const auto rounding_run = fixture::fit(cfg, rounding, data, rounding_dir.path.string());
    auto copies = bf16_replicas(cfg, replicas, true);
    const auto copies_run = fixture::fit(cfg, copies, data, copies_dir.path.string());
    auto fp32 = fixture::replicas(cfg, replicas);
    fixture::fit(cfg, fp32, data, fp32_dir.path.string());

    for (int r = 0; r < replicas; ++r) {
        REQUIRE(fixture::params_of(*copies[r]) == fixture::params_of(*rounding[r]));
        CHECK(recording(*rounding[r]).plain_gemms > 0);
        CHECK(recording(*rounding[r]).copied_gemms == 0);
        CHECK(recording(*copies[r]).plain_gemms == 0);  // every dense GEMM took the copies
        CHECK(recording(*copies[r]).copied_gemms == recording(*rounding[r]).plain_gemms);
        if (fused) CHECK(recording(*copies[r]).fused_copies > 0);  // (evaluation always runs the fused passes)
        // Graphs: one replica, and not under fp16 (its loss scale is a host value).
        if (graphs && replicas == 1 && precision != config::Precision::fp16) CHECK(recording(*copies[r]).replays > 0);
    }
    CHECK(copies_run.history.back().loss == rounding_run.history.back().loss);
    CHECK(copies_run.history.back().val_loss == rounding_run.history.back().val_loss);
    // The emulation rounds for real: fp32 training ends elsewhere.
    CHECK(fixture::params_of(*fp32[0]) != fixture::params_of(*copies[0]));
}

TEST_CASE("A dense layer rounds each GEMM operand once a step: x and its kernel in forward, dz in backward") {
    // 6 -> 32 (relu) -> 3 (softmax) at 16 rows: one training step.
    auto cfg = dense_job({32, 3}, 16);
    fixture::RecordingBackend backend;
    backend.set_bf16_gemm(true, true);
    nn::Model model(cfg.model, cfg.loss, backend, 16, cfg.training.seed);
    const data::Dataset d = fixture::blobs(16, 2);
    std::vector<float> stats(2, 0.0f);
    nn::RunContext ctx{backend, true, cfg.training.seed};
    model.forward_backward(ctx, d.inputs.data(), d.labels.data(), 16, 1.0f / 16, stats.data());
    CHECK(backend.copies_made == 6);
    // The relu layer rounds its output for the next layer's forward in its
    // bias + relu pass, and its dz in its gradient pass.
    CHECK(backend.fused_copies == 2);
    CHECK(backend.copied_gemms == 5);  // the first layer computes no input gradient
    CHECK(backend.copy_elements == (16 * 6 + 6 * 32 + 16 * 32) + (16 * 32 + 32 * 3 + 16 * 3));
    CHECK(backend.plain_gemms == 0);
    // gemm() needs no scratch: nothing calls it.
    CHECK(backend.reserved_gemm_scratch() == 0);
    // Each layer's block: its kernel's copy and its input's, each rounded up to 256 bytes.
    CHECK(model.gemm_copy_bytes() == (copy_bytes(6, 32) + copy_bytes(16, 6)) + (copy_bytes(32, 3) + copy_bytes(16, 32)));
    // The shared workspace holds, for the relu layer, its fp32 dz and then
    // dz's copy; for the output layer dz's copy alone (its dz is dy).
    CHECK(model.workspace_bytes() == 16 * 32 * 4 + 16 * 32 * 2);
    CHECK(model.scratch_floats() == 0);  // neither layer keeps z
}

// The scratch gemm() needs to round both operands of these dense layers at
// `rows` samples, and the largest that training asks for: forward x W,
// weight gradient x^T dz, input gradient dz W^T (reserved for the first
// layer too, which never runs it).
std::pair<size_t, size_t> scratch_for(const std::vector<std::pair<int64_t, int64_t>>& dense, int64_t rows) {
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

TEST_CASE("Without copies of their own, each replica reserves gemm()'s largest scratch before the first step") {
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
    std::vector<std::pair<int64_t, int64_t>> dense;
    int64_t in = 6;
    for (int64_t out : job.units) {
        dense.push_back({in, out});
        in = out;
    }
    const auto [reserve, called] = scratch_for(dense, job.batch / replicas);
    auto reps = bf16_replicas(cfg, replicas, false);
    data::DataSplits data;
    data.train = fixture::blobs(150, 4);  // a short last batch
    fixture::TempDir dir;
    fixture::fit(cfg, reps, data, dir.path.string());
    for (auto& r : reps) {
        const auto& be = recording(*r);
        CHECK(be.scratch_reservations == 1);
        CHECK(be.gemms_before_reserving == 0);
        CHECK(be.plain_gemms > 0);
        CHECK(be.reserved_gemm_scratch() == reserve);
        CHECK(be.largest_scratch_need == called);
    }
}

TEST_CASE("Without copies of their own, dense layers reserve gemm()'s scratch for the largest GEMM before training") {
    // Which GEMM needs the most scratch, with both operands rounded into it:
    // forward x W, weight gradient x^T dz, input gradient dz W^T (reserved for
    // the first layer too, which never runs it).
    auto cfg = dense_job({200, 3}, 16);
    fixture::RecordingBackend backend;
    backend.set_bf16_gemm(true, false);
    nn::Model model(cfg.model, cfg.loss, backend, 16, cfg.training.seed);
    const size_t first = std::max({copy_bytes(16, 6) + copy_bytes(6, 200), copy_bytes(16, 6) + copy_bytes(16, 200),
                                   copy_bytes(16, 200) + copy_bytes(6, 200)});
    const size_t second = std::max({copy_bytes(16, 200) + copy_bytes(200, 3), copy_bytes(16, 200) + copy_bytes(16, 3),
                                    copy_bytes(16, 3) + copy_bytes(200, 3)});
    CHECK(backend.reserved_gemm_scratch() == std::max(first, second));
    CHECK(model.gemm_copy_bytes() == 0);
    CHECK(model.workspace_bytes() == 16 * 200 * 4);  // the relu layer's fp32 dz
}

TEST_CASE("The memory estimate counts a GPU's 16-bit GEMM copies only where they are made") {
    auto cfg = fixture::small_job(1, 16);
    cfg.model.layers = {specs::layer("dense", {{"units", "200"}, {"activation", "relu"}}),
                        specs::layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    using config::Precision;
    const auto with = [&](Precision precision, bool cast, bool on_gpu) {
        cfg.training.precision = precision;
        cfg.training.cast_gemm_inputs = cast;
        return train::estimate_memory(cfg, 16, on_gpu);
    };
    // Kernels' and inputs' copies; the workspace grows by the widest dz's copy.
    const size_t kept = copy_bytes(6, 200) + copy_bytes(16, 6) + copy_bytes(200, 3) + copy_bytes(16, 200);
    CHECK(with(Precision::bf16, true, true).gemm_copy_bytes == kept);
    CHECK(with(Precision::bf16, true, true).workspace_bytes == 16 * 200 * 4 + 16 * 200 * 2);
    CHECK(with(Precision::bf16, false, true).workspace_bytes == 16 * 200 * 4);
    CHECK(with(Precision::fp16, true, true).gemm_copy_bytes == with(Precision::bf16, true, true).gemm_copy_bytes);
    CHECK(with(Precision::bf16, true, true).total_bytes() ==
          with(Precision::bf16, false, true).total_bytes() + kept + 16 * 200 * 2);
    CHECK(with(Precision::bf16, false, true).gemm_copy_bytes == 0);
    CHECK(with(Precision::tf32, true, true).gemm_copy_bytes == 0);
    CHECK(with(Precision::fp32, true, true).gemm_copy_bytes == 0);
    CHECK(with(Precision::bf16, true, false).gemm_copy_bytes == 0);
}

TEST_CASE("With copies, dense layers take no GEMM epilogue (they multiply fp32 operands) and train the same bits") {
    auto cfg = dense_job({24, 12, 3}, 16);
    data::DataSplits data;
    data.train = fixture::blobs(150, 4);
    fixture::TempDir plain_dir, epilogue_dir;
    auto plain = bf16_replicas(cfg, 1, true);
    fixture::fit(cfg, plain, data, plain_dir.path.string());
    cfg.training.gemm_epilogues = true;
    auto asked = bf16_replicas(cfg, 1, true);
    fixture::fit(cfg, asked, data, epilogue_dir.path.string());
    CHECK(recording(*asked[0]).epilogue_calls == 0);
    CHECK(fixture::params_of(*asked[0]) == fixture::params_of(*plain[0]));
}
