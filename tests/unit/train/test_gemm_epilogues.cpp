// training.gemm_epilogues end to end on the CPU: the recording backend offers
// the epilogue GEMMs a GPU has (one call for GEMM + bias + relu, one for the
// weight and bias gradients), built from the plain calls they stand for. The
// dense layers must take them where they apply, fall back where not, and train
// to the plain path's weights bit for bit, directly and as replayed graphs.
// This checks the layers' side: that nothing reads the pre-activation z the
// forward epilogue does not write. tests/gpu/test_cuda_gemm_epilogues.cpp checks the
// cuBLASLt kernels themselves.
#include "dist/local_communicator.hpp"
#include "recording_backend.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

std::vector<std::unique_ptr<train::Replica>> recording_replica(const config::RunConfig& cfg) {
    std::vector<std::unique_ptr<train::Replica>> out;
    auto comms = dist::make_local_communicators(1);
    out.push_back(std::make_unique<train::Replica>(cfg, std::make_unique<fixture::RecordingBackend>(),
                                                   std::move(comms[0]), cfg.training.batch_size));
    return out;
}

int64_t epilogue_calls(train::Replica& r) { return static_cast<fixture::RecordingBackend&>(r.backend()).epilogue_calls; }

// Every kind of dense layer: relu with and without bias, linear with bias
// (and the softmax one, linear once its softmax joins the loss), which take
// the epilogues; gelu, tanh and a linear layer without bias, which do not.
config::RunConfig every_dense_kind() {
    using specs::layer;
    auto cfg = fixture::small_job(2, 16);
    cfg.model.layers = {layer("dense", {{"units", "16"}, {"activation", "relu"}}),
                        layer("dense", {{"units", "12"}}),
                        layer("dense", {{"units", "12"}, {"activation", "relu"}, {"use_bias", "false"}}),
                        layer("dense", {{"units", "8"}, {"activation", "gelu"}}),
                        layer("dropout", {{"rate", "0.25"}}),
                        layer("dense", {{"units", "8"}, {"activation", "tanh"}}),
                        layer("dense", {{"units", "8"}, {"use_bias", "false"}}),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    return cfg;
}

}  // namespace

TEST_CASE("With GEMM epilogues, dense layers train to the plain path's weights; the layers that can use them do") {
    const bool graphs = GENERATE(false, true);
    INFO("training.cuda_graphs " << graphs);
    data::DataSplits data;
    data.train = fixture::blobs(150, 4);  // batches of 16: 9 full steps and one of 6, per epoch
    auto cfg = every_dense_kind();
    cfg.training.cuda_graphs = graphs;
    fixture::TempDir plain_dir, epilogue_dir;
    auto plain = fixture::replicas(cfg, 1);
    const auto plain_run = fixture::fit(cfg, plain, data, plain_dir.path.string());
    cfg.training.gemm_epilogues = true;
    auto fused = recording_replica(cfg);
    const auto fused_run = fixture::fit(cfg, fused, data, epilogue_dir.path.string());

    REQUIRE(fixture::params_of(*fused[0]) == fixture::params_of(*plain[0]));
    for (size_t e = 0; e < 2; ++e) {
        REQUIRE(fused_run.history[e].loss == plain_run.history[e].loss);
        REQUIRE(fused_run.history[e].metric == plain_run.history[e].metric);
    }
    // Per step: 4 forward epilogues (relu, linear, relu without bias, the
    // output layer) and 2 backward ones (the two linear layers with bias).
    // With graphs, each shape (the full and the last batch) runs once
    // directly and once as it is recorded; replays call nothing.
    CHECK(epilogue_calls(*fused[0]) == (graphs ? 2 * 2 * 6 : 2 * 10 * 6));
}

TEST_CASE("gemm_epilogues false: the backend's epilogue GEMMs are never taken") {
    data::DataSplits data;
    data.train = fixture::blobs(64, 4);
    auto cfg = every_dense_kind();
    fixture::TempDir dir;
    auto reps = recording_replica(cfg);
    fixture::fit(cfg, reps, data, dir.path.string());
    CHECK(epilogue_calls(*reps[0]) == 0);
}
