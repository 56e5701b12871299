// multi_worker_mirrored without MPI: fake worker processes (threads, see
// tests/unit/dist/fake_processes.hpp) each run a whole Trainer on their own
// replicas, as mpirun's processes would. The result must be the weights one
// process trains on the same global batch, and only global rank 0 writes.
#include <filesystem>
#include <thread>

#include "../dist/fake_processes.hpp"
#include "train/checkpointer.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

struct WorkerRun {
    std::vector<std::unique_ptr<train::Replica>> replicas;
    train::FitResult result;
    std::string error;
};

// `workers` fake processes with `local` CPU replicas each, every one training
// into dirs[p] (resuming from `resume` when given).
std::vector<WorkerRun> fit_workers(const config::RunConfig& cfg, const data::DataSplits& data, int workers, int local,
                                   const std::vector<std::string>& dirs, const std::string& resume = "") {
    auto procs = fake::make_processes(workers);
    std::vector<WorkerRun> runs(static_cast<size_t>(workers));
    std::vector<std::thread> threads;
    for (int p = 0; p < workers; ++p)
        threads.emplace_back([&, p] {
            try {
                device::Discovery found;
                found.cpu.logical_cores = 1;
                train::Strategy strategy(cfg, found, {"cpu", local, procs[p].get()});
                runs[p].replicas = strategy.make_replicas(cfg, cfg.training.batch_size);
                runs[p].result = fixture::fit(cfg, runs[p].replicas, data, dirs[p], resume);
            } catch (const std::exception& e) {
                runs[p].error = e.what();
                procs[p]->cancel();
            }
        });
    for (auto& t : threads) t.join();
    return runs;
}

}  // namespace

TEST_CASE("Workers x replicas train the weights of one replica on the same global batch; only rank 0 writes") {
    data::DataSplits data;
    data.train = fixture::blobs(47, 3);  // 4 batches of 10 + 7: uneven shards over 2, 3, 4 replicas
    data.validation = fixture::blobs(13, 9);
    auto cfg = fixture::small_job(2, 10);
    cfg.strategy.type = config::StrategyType::multi_worker_mirrored;
    fixture::TempDir one_dir;
    auto one = fixture::replicas(cfg, 1);
    const auto reference_result = fixture::fit(cfg, one, data, one_dir.path.string());
    const auto reference = fixture::params_of(*one[0]);

    for (auto [workers, local] : std::vector<std::pair<int, int>>{{2, 1}, {2, 2}, {3, 1}}) {
        INFO(workers << " workers x " << local << " replicas");
        std::vector<fixture::TempDir> dirs(static_cast<size_t>(workers));
        std::vector<std::string> paths;
        for (auto& d : dirs) paths.push_back(d.path.string());
        auto runs = fit_workers(cfg, data, workers, local, paths);
        for (auto& run : runs) REQUIRE(run.error.empty());
        const auto weights = fixture::params_of(*runs[0].replicas[0]);
        REQUIRE(fixture::relative_difference(reference, weights) <= 1e-5);
        for (auto& run : runs)
            for (auto& r : run.replicas) REQUIRE(fixture::params_of(*r) == weights);
        // Every worker saw the same global metrics; only worker 0 wrote files.
        for (auto& run : runs) {
            REQUIRE(run.result.history.size() == 2);
            REQUIRE(run.result.history[1].loss == runs[0].result.history[1].loss);
            REQUIRE(run.result.history[1].val_loss == runs[0].result.history[1].val_loss);
        }
        REQUIRE(runs[0].result.history[1].loss == Approx(reference_result.history[1].loss).epsilon(1e-5));
        REQUIRE(std::filesystem::exists(dirs[0].path / "last.safetensors"));
        REQUIRE(std::filesystem::exists(dirs[0].path / "metrics.csv"));
        for (int p = 1; p < workers; ++p) REQUIRE(std::filesystem::is_empty(dirs[static_cast<size_t>(p)].path));
    }
}

TEST_CASE("A checkpoint of one process resumes on two workers as if never interrupted") {
    data::DataSplits data;
    data.train = fixture::blobs(40, 5);
    auto cfg = fixture::small_job(2, 8);
    cfg.strategy.type = config::StrategyType::multi_worker_mirrored;
    fixture::TempDir straight, resumed, other;
    auto one = fixture::replicas(cfg, 1);
    fixture::fit(cfg, one, data, straight.path.string());

    auto first = cfg;
    first.training.epochs = 1;
    auto half = fixture::replicas(first, 1);
    fixture::fit(first, half, data, resumed.path.string());
    const std::string checkpoint = (resumed.path / "last.safetensors").string();
    auto runs = fit_workers(cfg, data, 2, 1, {resumed.path.string(), other.path.string()}, checkpoint);
    for (auto& run : runs) REQUIRE(run.error.empty());
    REQUIRE(runs[0].result.history.size() == 1);
    REQUIRE(fixture::relative_difference(fixture::params_of(*one[0]), fixture::params_of(*runs[0].replicas[0])) <=
            1e-5);
    REQUIRE(fixture::params_of(*runs[1].replicas[0]) == fixture::params_of(*runs[0].replicas[0]));
}

TEST_CASE("Workers on one machine split its GPUs evenly, or use the ones the launcher left visible") {
    REQUIRE(train::gpus_for_local_process({0, 1, 2, 3}, 0, 1) == std::vector<int>{0, 1, 2, 3});
    REQUIRE(train::gpus_for_local_process({0, 1, 2, 3}, 1, 2) == std::vector<int>{2, 3});
    REQUIRE(train::gpus_for_local_process({0, 1, 2, 3, 4, 5, 6, 7}, 5, 8) == std::vector<int>{5});
    REQUIRE(train::gpus_for_local_process({0, 1, 2}, 1, 2) == std::vector<int>{1, 2});
    REQUIRE(train::gpus_for_local_process({0}, 3, 8) == std::vector<int>{0});  // srun --gpus-per-task=1
}

TEST_CASE("One worker is exactly mirrored") {
    auto cfg = fixture::small_job(1, 8);
    cfg.strategy.type = config::StrategyType::multi_worker_mirrored;
    auto procs = fake::make_processes(1);
    device::Discovery found;
    found.cpu.logical_cores = 1;
    train::Strategy strategy(cfg, found, {"cpu", 2, procs[0].get()});
    REQUIRE(strategy.workers() == 1);
    REQUIRE(strategy.describe(8) == "multi_worker_mirrored: 2 replicas (CPU threads), global batch 8 = 4 per replica");
}
