// Training on the GPU against the CPU: the same trainer, strategy and
// checkpoints, only the backend (and communicator) differ.
#include "../unit/train/train_fixture.hpp"
#include "core/error.hpp"
#include "data/dataset.hpp"
#include "device/devices.hpp"
#include "train/checkpointer.hpp"
#include "train/evaluator.hpp"

using namespace gputrain;

namespace {

std::vector<std::unique_ptr<train::Replica>> gpu_replicas(const config::RunConfig& cfg) {
    train::Strategy strategy(cfg, device::discover(), {"gpu", 0});
    REQUIRE(strategy.on_gpu());
    return strategy.make_replicas(cfg, cfg.training.batch_size);
}

std::vector<float> host_params(train::Replica& r) {
    std::vector<float> out(r.model().param_count());
    r.backend().copy_to_host(out.data(), r.model().param_data(), out.size() * sizeof(float));
    return out;
}

}  // namespace

TEST_CASE("Training on the GPU follows the CPU from the same initial weights") {
    data::DataSplits data;
    data.train = fixture::blobs(203, 3);
    const auto cfg = fixture::small_job(2, 16);
    fixture::TempDir cpu_dir, gpu_dir;
    auto cpu = fixture::replicas(cfg, 1);
    auto gpu = gpu_replicas(cfg);
    REQUIRE(host_params(*gpu[0]) == fixture::params_of(*cpu[0]));  // same seed, same initial weights
    fixture::fit(cfg, cpu, data, cpu_dir.path.string());
    fixture::fit(cfg, gpu, data, gpu_dir.path.string());
    REQUIRE(fixture::relative_difference(fixture::params_of(*cpu[0]), host_params(*gpu[0])) <= 1e-4);
}

TEST_CASE("Two replicas sharing the GPU (device communicator) equal one replica on the same global batch") {
    data::DataSplits data;
    data.train = fixture::blobs(101, 5);
    auto cfg = fixture::small_job(2, 10);
    fixture::TempDir one_dir, two_dir;
    auto one = gpu_replicas(cfg);
    fixture::fit(cfg, one, data, one_dir.path.string());
    cfg.strategy.replicas_per_gpu = 2;
    auto two = gpu_replicas(cfg);
    REQUIRE(two.size() == 2);
    fixture::fit(cfg, two, data, two_dir.path.string());
    const auto reference = host_params(*one[0]);
    REQUIRE(fixture::relative_difference(reference, host_params(*two[0])) <= 1e-5);
    REQUIRE(host_params(*two[1]) == host_params(*two[0]));
}

TEST_CASE("A checkpoint written on the GPU scores the same on the CPU") {
    data::DataSplits data;
    data.train = fixture::blobs(300, 7);
    const auto test = fixture::blobs(97, 9);
    const auto cfg = fixture::small_job(3, 32);
    fixture::TempDir dir;
    auto gpu = gpu_replicas(cfg);
    fixture::fit(cfg, gpu, data, dir.path.string());
    const auto on_gpu = train::evaluate(gpu, test, 32);
    auto cpu = fixture::replicas(cfg, 1);
    train::restore((dir.path / "last.safetensors").string(), cpu, cfg, true);
    const auto on_cpu = train::evaluate(cpu, test, 32);
    REQUIRE(on_cpu.accuracy == on_gpu.accuracy);
    REQUIRE(on_cpu.loss == Approx(on_gpu.loss).epsilon(1e-5));
}

TEST_CASE("The reference job reaches the CPU acceptance accuracy on the GPU") {
    config::RunConfig cfg;
    cfg.model = specs::mlp({28, 28}, 128, 10);
    cfg.data.dataset = "fashion-mnist";
    cfg.training.epochs = 5;
    cfg.logging.metrics_file = "";
    data::DataSplits data;
    try {
        data = data::load_splits(cfg.data, cfg.model.input_shape, data::Need::both);
    } catch (const Error& e) {
        WARN("skipped: " << e.what());
        return;
    }
    fixture::TempDir dir;
    auto gpu = gpu_replicas(cfg);
    fixture::fit(cfg, gpu, data, dir.path.string());
    const auto result = train::evaluate(gpu, data.test, 256);
    INFO("test accuracy " << result.accuracy);
    REQUIRE(result.accuracy >= 0.86);
}
