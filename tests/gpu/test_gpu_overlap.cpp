// Overlap on the GPU must not change what is trained: gradient buckets
// all-reduced during backward (device communicator; NCCL with two GPUs)
// against one all-reduce after it, and a resident training set against
// batches copied one step ahead. Both bit for bit.
#include "../unit/train/train_fixture.hpp"
#include "backend/cuda/cuda_backend.hpp"
#include "device/devices.hpp"

using namespace gputrain;
using specs::layer;

namespace {

std::vector<float> host_params(train::Replica& r) {
    std::vector<float> out(r.model().param_count());
    r.backend().copy_to_host(out.data(), r.model().param_data(), out.size() * sizeof(float));
    return out;
}

// Trains on the GPU(s) and returns every replica's weights.
std::vector<std::vector<float>> train_gpu(const config::RunConfig& cfg, const data::DataSplits& data,
                                          bool expect_resident) {
    train::Strategy strategy(cfg, device::discover(), {"gpu", 0});
    REQUIRE(strategy.on_gpu());
    auto reps = strategy.make_replicas(cfg, cfg.training.batch_size);
    fixture::TempDir dir;
    fixture::fit(cfg, reps, data, dir.path.string());
    std::vector<std::vector<float>> out;
    for (auto& r : reps) {
        REQUIRE(r->resident() == expect_resident);
        out.push_back(host_params(*r));
    }
    return out;
}

}  // namespace

TEST_CASE("Bucketed all-reduces on the GPU train bit-identical weights to one all-reduce after backward") {
    data::DataSplits data;
    data.train = fixture::blobs(203, 3);
    struct Setup {
        config::CommunicatorKind communicator;
        int64_t per_gpu;
        std::string devices;
    };
    using config::CommunicatorKind;
    std::vector<Setup> setups{{CommunicatorKind::device, 2, "0"}, {CommunicatorKind::device, 3, "0"}};
    if (cuda_device_count() >= 2) setups.push_back({CommunicatorKind::nccl, 1, "0,1"});
    for (const auto& setup : setups) {
        for (int64_t batch : {16, 2}) {  // batch 2 over 3 replicas leaves a shard empty
            INFO(config::name_of(setup.communicator) << ", " << setup.per_gpu << " per GPU on " << setup.devices
                                                     << ", batch " << batch);
            auto cfg = fixture::deep_job(batch);
            cfg.strategy.communicator = setup.communicator;
            cfg.strategy.replicas_per_gpu = setup.per_gpu;
            cfg.strategy.devices = setup.devices;
            cfg.strategy.bucket_mb = 0;
            const auto reference = train_gpu(cfg, data, true);
            for (const auto& w : reference) REQUIRE(w == reference[0]);
            for (double mb : {1e-9, 600.0 / (1024 * 1024), 1.0}) {
                INFO("bucket_mb " << mb);
                cfg.strategy.bucket_mb = mb;
                for (const auto& w : train_gpu(cfg, data, true)) REQUIRE(w == reference[0]);
            }
        }
    }
}

TEST_CASE("A resident training set trains bit-identical weights to batches copied one step ahead") {
    data::DataSplits data;
    data.train = fixture::blobs(203, 5);  // 12 batches of 16 and a last one of 11
    for (int64_t per_gpu : {1, 2}) {
        INFO(per_gpu << " replicas on the GPU");
        auto cfg = fixture::small_job(3, 16);
        cfg.strategy.replicas_per_gpu = per_gpu;
        cfg.data.resident = config::ResidentMode::off;
        const auto copied = train_gpu(cfg, data, false);
        cfg.data.resident = config::ResidentMode::on;
        const auto resident = train_gpu(cfg, data, true);
        cfg.data.resident = config::ResidentMode::automatic;  // 203 samples fit
        const auto automatic = train_gpu(cfg, data, true);
        REQUIRE(resident == copied);
        REQUIRE(automatic == copied);
        // And both follow the CPU.
        fixture::TempDir dir;
        cfg.strategy.replicas_per_gpu = 1;
        auto cpu = fixture::replicas(cfg, static_cast<int>(per_gpu));
        fixture::fit(cfg, cpu, data, dir.path.string());
        REQUIRE(fixture::relative_difference(fixture::params_of(*cpu[0]), copied[0]) <= 1e-4);
    }
}
