// The trainer's graph path end to end on the CPU: a backend that records and
// replays like CUDA graphs (recording_backend.hpp) must train to the same
// weights, bit for bit, as running every call directly. This holds only if
// everything that changes from step to step reaches the recorded calls through
// memory: the optimizer's step size (a decaying schedule here), dropout's key,
// the batch, the finite flag.
#include <limits>

#include "checkpoint/safetensors.hpp"
#include "dist/local_communicator.hpp"
#include "recording_backend.hpp"
#include "train/step_graphs.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

std::vector<std::unique_ptr<train::Replica>> recording_replicas(const config::RunConfig& cfg,
                                                               bool device_memory = false) {
    std::vector<std::unique_ptr<train::Replica>> out;
    auto comms = dist::make_local_communicators(1);
    out.push_back(std::make_unique<train::Replica>(cfg, std::make_unique<fixture::RecordingBackend>(device_memory),
                                                   std::move(comms[0]), cfg.training.batch_size));
    return out;
}

int64_t replays_of(train::Replica& r) { return static_cast<fixture::RecordingBackend&>(r.backend()).replays; }

}  // namespace

TEST_CASE("Recorded and replayed steps train to the weights of direct steps") {
    const config::OptimizerType optimizer = GENERATE(config::OptimizerType::adam, config::OptimizerType::sgd);
    const config::ResidentMode resident = GENERATE(config::ResidentMode::on, config::ResidentMode::off);
    const bool device_memory = GENERATE(false, true);  // true: staged copies into two buffers, as on a GPU
    INFO(config::name_of(optimizer) << ", data.resident " << config::name_of(resident) << ", device memory "
                                    << device_memory);
    data::DataSplits data;
    data.train = fixture::blobs(203, 3);  // batches of 16: 12 full steps and one of 11
    auto cfg = fixture::small_job(3, 16, optimizer);  // with dropout
    cfg.data.resident = resident;
    cfg.optimizer.schedule.type = config::ScheduleType::exponential_decay;  // a new learning rate every step
    cfg.optimizer.schedule.decay_steps = 7;
    cfg.optimizer.schedule.decay_rate = 0.5;
    fixture::TempDir direct_dir, graph_dir;
    auto direct = fixture::replicas(cfg, 1);
    const auto direct_run = fixture::fit(cfg, direct, data, direct_dir.path.string());
    auto graphs = recording_replicas(cfg, device_memory);
    REQUIRE(train::step_graphs_unusable(cfg, *graphs[0]).empty());
    const auto graph_run = fixture::fit(cfg, graphs, data, graph_dir.path.string());
    REQUIRE(graphs[0]->graphs().failure().empty());
    REQUIRE(graphs[0]->stages_ahead() == (device_memory && resident == config::ResidentMode::off));
    // 3 epochs x 13 steps: each shape (full and last batch; with staged
    // copies, in each of the two buffers) runs directly once, then is replayed.
    const int64_t shapes = graphs[0]->stages_ahead() ? 4 : 2;
    REQUIRE(graphs[0]->graphs().replays() >= 3 * 13 - shapes);
    REQUIRE(replays_of(*graphs[0]) == graphs[0]->graphs().replays());
    REQUIRE(fixture::params_of(*graphs[0]) == fixture::params_of(*direct[0]));
    for (size_t e = 0; e < 3; ++e) {
        REQUIRE(graph_run.history[e].loss == direct_run.history[e].loss);
        REQUIRE(graph_run.history[e].metric == direct_run.history[e].metric);
    }
}

TEST_CASE("A CNN with batch norm and dropout: replayed steps give the direct weights and moving statistics") {
    using specs::layer;
    data::DataSplits data;
    data.train = fixture::blobs(150, 4);  // batches of 16: 9 full steps and one of 6
    auto cfg = fixture::small_job(2, 16);
    cfg.model.layers = {layer("reshape", {{"target_shape", "3,2,1"}}),
                        layer("conv2d", {{"filters", "4"}, {"kernel_size", "2"}, {"padding", "same"},
                                         {"use_bias", "false"}}),
                        layer("batch_norm", {{"momentum", "0.9"}}),
                        layer("relu"),
                        layer("max_pool2d", {{"pool_size", "2,1"}, {"padding", "same"}}),
                        layer("flatten"),
                        layer("dropout", {{"rate", "0.2"}}),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    fixture::TempDir direct_dir, graph_dir;
    auto direct = fixture::replicas(cfg, 1);
    fixture::fit(cfg, direct, data, direct_dir.path.string());
    auto graphs = recording_replicas(cfg);
    fixture::fit(cfg, graphs, data, graph_dir.path.string());
    REQUIRE(replays_of(*graphs[0]) == 2 * 10 - 2);
    REQUIRE(fixture::params_of(*graphs[0]) == fixture::params_of(*direct[0]));
    const auto state = [](train::Replica& r) {
        return std::vector<float>(r.model().state_data(), r.model().state_data() + r.model().state_count());
    };
    REQUIRE(state(*graphs[0]) == state(*direct[0]));
}

TEST_CASE("A graph with add, concatenate, multiply and a tensor read three times: replayed steps give the direct weights") {
    using specs::layer;
    const auto reading = [](config::LayerSpec s, std::vector<std::string> inputs) {
        for (auto& name : inputs) s.inputs.push_back(config::LayerInput{name});
        return s;
    };
    data::DataSplits data;
    data.train = fixture::blobs(150, 4);  // batches of 16: 9 full steps and one of 6
    auto cfg = fixture::small_job(2, 16);
    cfg.model.layers = {layer("dense", {{"units", "5"}, {"activation", "tanh"}}, "a"),
                        layer("dense", {{"units", "5"}, {"activation", "sigmoid"}}, "b"),
                        reading(layer("add", {}, "sum"), {"a", "b"}),
                        reading(layer("multiply", {}, "product"), {"sum", "a"}),
                        reading(layer("concatenate", {}, "joined"), {"product", "a", "input"}),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    fixture::TempDir direct_dir, graph_dir;
    auto direct = fixture::replicas(cfg, 1);
    fixture::fit(cfg, direct, data, direct_dir.path.string());
    auto graphs = recording_replicas(cfg);
    fixture::fit(cfg, graphs, data, graph_dir.path.string());
    REQUIRE(replays_of(*graphs[0]) == 2 * 10 - 2);
    REQUIRE(fixture::params_of(*graphs[0]) == fixture::params_of(*direct[0]));
}

TEST_CASE("The recording backend keeps arguments and reads memory at replay, as CUDA graphs do") {
    fixture::RecordingBackend be;
    std::vector<uint32_t> key{7, 0};
    const std::vector<float> x(64, 1.0f);
    std::vector<float> from_memory(64), from_argument(64), mask(64);
    be.begin_capture();
    be.dropout_forward_keyed(x.data(), from_memory.data(), mask.data(), x.size(), 0.5f, key.data(), 0);
    be.dropout_forward(x.data(), from_argument.data(), mask.data(), x.size(), 0.5f, 7, 0);
    const int graph = be.end_capture();
    REQUIRE(from_memory == std::vector<float>(64, 0.0f));  // recording runs nothing
    key = {8, 0};
    be.replay(graph);
    std::vector<float> with7(64), with8(64);
    be.dropout_forward(x.data(), with7.data(), mask.data(), x.size(), 0.5f, 7, 0);
    be.dropout_forward(x.data(), with8.data(), mask.data(), x.size(), 0.5f, 8, 0);
    REQUIRE(with7 != with8);
    REQUIRE(from_memory == with8);    // read at replay
    REQUIRE(from_argument == with7);  // kept from the recording
    be.begin_capture();
    std::vector<float> host(4);
    REQUIRE_THROWS(be.copy_to_host(host.data(), x.data(), 16));  // waits on the host: not while recording
    REQUIRE_THROWS_WITH(be.end_capture(), Catch::Contains("could not be recorded"));
}

TEST_CASE("fp16: replayed steps, overflows among them, give the direct weights and loss scale") {
    data::DataSplits data;
    data.train = fixture::blobs(203, 3);
    data.train.inputs[6 * 20] = std::numeric_limits<float>::infinity();  // sample 20: the second batch overflows
    auto cfg = fixture::small_job(3, 16);
    cfg.training.precision = config::Precision::fp16;
    cfg.training.shuffle = false;
    fixture::TempDir direct_dir, graph_dir;
    auto direct = fixture::replicas(cfg, 1);
    const auto direct_run = fixture::fit(cfg, direct, data, direct_dir.path.string());
    auto graphs = recording_replicas(cfg);
    REQUIRE(train::step_graphs_unusable(cfg, *graphs[0]).empty());
    const auto graph_run = fixture::fit(cfg, graphs, data, graph_dir.path.string());
    REQUIRE(graphs[0]->graphs().failure().empty());
    REQUIRE(replays_of(*graphs[0]) >= 3 * 13 - 2);
    REQUIRE(fixture::params_of(*graphs[0]) == fixture::params_of(*direct[0]));
    // (The epoch's mean loss is NaN: the poisoned sample's own loss is.)
    REQUIRE(graph_run.history.back().metric == direct_run.history.back().metric);
    for (const auto* d : {&direct_dir, &graph_dir})
        REQUIRE(checkpoint::load((d->path / "last.safetensors").string()).metadata.at("loss_scale") == "8192");
}

TEST_CASE("fp16 at loss scale 1: a non-finite step found at a report stops with the weights before it, replayed or not") {
    // A first run ends with loss scale 1 in its checkpoint (the metadata
    // rewritten), so that the resumed run's non-finite step is divergence.
    auto t = fixture::late_nan();
    t.cfg.training.precision = config::Precision::fp16;
    t.cfg.training.epochs = 1;
    fixture::TempDir first;
    auto warm = fixture::replicas(t.cfg, 1);
    fixture::fit(t.cfg, warm, t.first_two, first.path.string());
    const std::string path = (first.path / "last.safetensors").string();
    auto contents = checkpoint::load(path);
    contents.metadata["loss_scale"] = "1";
    fixture::save_contents(contents, path);

    auto more = t.cfg;
    more.training.epochs = 2;  // epoch 2: steps 1-2 clean, step 3 NaN, step 4 clean but held back (sticky)
    std::vector<std::vector<float>> stopped_params;
    for (const bool record : {false, true}) {
        INFO((record ? "recorded and replayed" : "direct"));
        fixture::TempDir dir;
        auto stopped = record ? recording_replicas(more) : fixture::replicas(more, 1);
        REQUIRE_THROWS_WITH(fixture::fit(more, stopped, t.poisoned, dir.path.string(), path),
                            Catch::StartsWith("training diverged: NaN or Inf in the gradients at epoch 2, step 3/4;"));
        stopped_params.push_back(fixture::params_of(*stopped[0]));
    }
    REQUIRE(stopped_params[0] == stopped_params[1]);
    // The weights are those after epoch 2's two clean steps: a resumed run on them alone.
    fixture::TempDir clean_dir;
    auto clean = fixture::replicas(more, 1);
    fixture::fit(more, clean, t.first_two, clean_dir.path.string(), path);
    REQUIRE(fixture::params_of(*clean[0]) == stopped_params[0]);
}

TEST_CASE("On the recording backend, NaN found at a report stops with the weights before it") {
    const auto stopped = fixture::check_late_nan_stop(
        [](const config::RunConfig& cfg) { return recording_replicas(cfg); }, fixture::params_of);
    REQUIRE(replays_of(*stopped[0]) == 3);  // step 1 ran directly, steps 2-4 as replays (3 held the NaN)
}

TEST_CASE("A step records one operation per call of the reference MLP's step; fusing and the resident gather count") {
    // The reference job's shape (dense relu, dense softmax, Adam) on 6 inputs.
    // With a resident set on a device: the gather; forward: GEMM, bias + relu,
    // GEMM, bias; the fused softmax cross-entropy; backward: the output bias
    // gradient, two GEMMs, relu gradient + bias gradient, one GEMM; the finite
    // check and the guarded Adam update: 13 operations in one graph launch.
    using specs::layer;
    data::DataSplits data;
    data.train = fixture::blobs(64, 3);
    auto cfg = fixture::small_job(1, 16);
    cfg.model.layers = {layer("dense", {{"units", "16"}, {"activation", "relu"}}),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    using config::ResidentMode;
    const auto nodes = [&](bool fused, ResidentMode resident, bool epilogues = false) {
        cfg.training.fused_kernels = fused;
        cfg.data.resident = resident;
        cfg.training.gemm_epilogues = epilogues;
        auto graphs = recording_replicas(cfg, /*device_memory=*/true);
        fixture::TempDir dir;
        fixture::fit(cfg, graphs, data, dir.path.string());
        REQUIRE(graphs[0]->graphs().replays() > 0);
        return graphs[0]->graphs().first_graph_nodes();
    };
    CHECK(nodes(true, ResidentMode::on) == 13);
    CHECK(nodes(false, ResidentMode::on) == 15);  // relu and its bias apart, each way
    CHECK(nodes(true, ResidentMode::off) == 12);  // staged copies arrive before the step, outside it
    // GEMM epilogues: each forward GEMM takes its bias (and relu), the output
    // layer's weight-gradient GEMM its bias gradient.
    CHECK(nodes(true, ResidentMode::on, true) == 10);
}

TEST_CASE("A second fit on the same replicas records its steps again: resident, then staged, then resident") {
    // Recorded steps of a resident set gather from its memory, which the next
    // fit releases; a step recorded without a resident set has no gather.
    // Each fit must match the same fit on replicas that run every call directly.
    data::DataSplits first, second;
    first.train = fixture::blobs(96, 5);
    second.train = fixture::blobs(80, 6);
    auto cfg = fixture::small_job(2, 16);
    auto graphs = recording_replicas(cfg, /*device_memory=*/true);
    auto direct = fixture::replicas(cfg, 1);
    int run = 0;
    using config::ResidentMode;
    for (const auto& [resident, data] :
         {std::pair{ResidentMode::on, &first}, std::pair{ResidentMode::off, &second},
          std::pair{ResidentMode::on, &second}}) {
        INFO("fit " << ++run << ", data.resident " << config::name_of(resident));
        cfg.data.resident = resident;
        fixture::TempDir graph_dir, direct_dir;
        fixture::fit(cfg, graphs, *data, graph_dir.path.string());
        fixture::fit(cfg, direct, *data, direct_dir.path.string());
        REQUIRE(graphs[0]->graphs().failure().empty());
        REQUIRE(fixture::params_of(*graphs[0]) == fixture::params_of(*direct[0]));
    }
    REQUIRE(replays_of(*graphs[0]) > 0);
}
