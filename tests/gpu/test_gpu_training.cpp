// Training on the GPU against the CPU: the same trainer, strategy and
// checkpoints, only the backend (and communicator) differ.
#include <limits>

#include "../unit/train/train_fixture.hpp"
#include "checkpoint/safetensors.hpp"
#include "core/error.hpp"
#include "data/dataset.hpp"
#include "device/devices.hpp"
#include "train/checkpointer.hpp"
#include "train/evaluator.hpp"
#include "train/step_graphs.hpp"

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

TEST_CASE("A graph model (residual add, concatenation, batch norm) trains on the GPU as on the CPU") {
    data::DataSplits data;
    data.train = fixture::blobs(203, 3);
    for (const bool graphs : {false, true}) {
        INFO("cuda_graphs " << graphs);
        auto cfg = fixture::residual_job(16, "false");
        cfg.training.cuda_graphs = graphs;
        fixture::TempDir cpu_dir, gpu_dir;
        auto cpu = fixture::replicas(cfg, 1);
        auto gpu = gpu_replicas(cfg);
        REQUIRE(host_params(*gpu[0]) == fixture::params_of(*cpu[0]));
        fixture::fit(cfg, cpu, data, cpu_dir.path.string());
        fixture::fit(cfg, gpu, data, gpu_dir.path.string());
        REQUIRE(fixture::relative_difference(fixture::params_of(*cpu[0]), host_params(*gpu[0])) <= 1e-4);
        if (graphs) REQUIRE(gpu[0]->graphs().replays() >= 20);
    }
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
    REQUIRE(on_cpu.metric == on_gpu.metric);
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
    INFO("test accuracy " << result.metric);
    REQUIRE(result.metric >= 0.86);
}

namespace {

// small_job without its dropout layer.
config::RunConfig without_dropout(int64_t epochs, int64_t batch) {
    auto cfg = fixture::small_job(epochs, batch);
    cfg.model.layers.erase(cfg.model.layers.begin() + 1);
    return cfg;
}

}  // namespace

TEST_CASE("Steps replayed as CUDA graphs give the weights of steps run call by call") {
    data::DataSplits data;
    data.train = fixture::blobs(203, 3);  // batches of 16: 12 full steps and one of 11
    for (const bool dropout : {true, false}) {  // dropout: a new mask key every step, from device memory
        for (const config::ResidentMode resident : {config::ResidentMode::on, config::ResidentMode::off}) {
            // gathered on the device, or copied in turn
            INFO("dropout " << dropout << ", data.resident " << config::name_of(resident));
            auto cfg = dropout ? fixture::small_job(2, 16) : without_dropout(2, 16);
            cfg.data.resident = resident;
            fixture::TempDir direct_dir, graph_dir;
            cfg.training.cuda_graphs = false;
            auto direct = gpu_replicas(cfg);
            const auto direct_run = fixture::fit(cfg, direct, data, direct_dir.path.string());
            REQUIRE(direct[0]->graphs().replays() == 0);
            cfg.training.cuda_graphs = true;
            auto graphs = gpu_replicas(cfg);
            REQUIRE(train::step_graphs_unusable(cfg, *graphs[0]).empty());
            const auto graph_run = fixture::fit(cfg, graphs, data, graph_dir.path.string());
            REQUIRE(graphs[0]->graphs().failure().empty());
            REQUIRE(graphs[0]->graphs().replays() >= 20);
            // The same kernels on the same data: the same bits.
            REQUIRE(host_params(*graphs[0]) == host_params(*direct[0]));
            REQUIRE(graph_run.history[1].loss == Approx(direct_run.history[1].loss).epsilon(1e-6));
            REQUIRE(graph_run.history[1].metric == direct_run.history[1].metric);
        }
    }
}

TEST_CASE("CUDA graphs are off, with the reason, for replicas sharing the GPU; fp16 records its step too") {
    auto fp16 = fixture::small_job(1, 16);
    auto gpu = gpu_replicas(fp16);
    fp16.training.precision = config::Precision::fp16;  // the loss scale lives in device memory
    REQUIRE(train::step_graphs_unusable(fp16, *gpu[0]).empty());
    auto two = fixture::small_job(1, 16);
    two.strategy.replicas_per_gpu = 2;
    auto shared = gpu_replicas(two);
    REQUIRE(train::step_graphs_unusable(two, *shared[0]).rfind("2 replicas", 0) == 0);
    two.training.cuda_graphs = false;
    REQUIRE(train::step_graphs_unusable(two, *gpu[0]) == "training.cuda_graphs: false");
}

TEST_CASE("fp16 on the GPU: replayed steps, overflows among them, give the weights and loss scale of direct steps") {
    data::DataSplits data;
    data.train = fixture::blobs(203, 3);
    data.train.inputs[6 * 20] = std::numeric_limits<float>::infinity();  // sample 20: the second batch overflows
    auto cfg = without_dropout(2, 16);
    cfg.training.precision = config::Precision::fp16;
    cfg.training.shuffle = false;
    fixture::TempDir direct_dir, graph_dir;
    cfg.training.cuda_graphs = false;
    auto direct = gpu_replicas(cfg);
    fixture::fit(cfg, direct, data, direct_dir.path.string());
    cfg.training.cuda_graphs = true;
    auto graphs = gpu_replicas(cfg);
    fixture::fit(cfg, graphs, data, graph_dir.path.string());
    REQUIRE(graphs[0]->graphs().failure().empty());
    REQUIRE(graphs[0]->graphs().replays() >= 20);
    REQUIRE(host_params(*graphs[0]) == host_params(*direct[0]));
    const auto scale_of = [](const fixture::TempDir& d) {
        return checkpoint::load((d.path / "last.safetensors").string()).metadata.at("loss_scale");
    };
    REQUIRE(scale_of(direct_dir) == "16384");  // halved once an epoch
    REQUIRE(scale_of(graph_dir) == "16384");
}

TEST_CASE("On the GPU, NaN gradients found at a progress report name their step; no update follows") {
    const auto stopped = fixture::check_late_nan_stop(gpu_replicas, host_params);
    REQUIRE(stopped[0]->graphs().replays() == 3);  // step 1 ran directly, steps 2-4 as replays (3 held the NaN)
}
