#include "train_fixture.hpp"
#include "train/evaluator.hpp"

using namespace gputrain;

// N replicas on global batch B must give the weights 1 replica gets on B:
// shards weighted by size, a smaller last batch, empty shards, dropout included.
TEST_CASE("N replicas train the same weights as one replica on the same global batch") {
    data::DataSplits data;
    data.train = fixture::blobs(47, 3);  // 47 = 4 batches of 10 + a last batch of 7
    for (const config::OptimizerType optimizer :
         {config::OptimizerType::adam, config::OptimizerType::sgd, config::OptimizerType::rmsprop}) {
        for (int64_t batch : {10, 2}) {  // batch 2 over 3 replicas leaves one shard empty every step
            INFO("optimizer " << config::name_of(optimizer) << ", batch " << batch);
            const auto cfg = fixture::small_job(2, batch, optimizer);
            fixture::TempDir d1;
            auto one = fixture::replicas(cfg, 1);
            fixture::fit(cfg, one, data, d1.path.string());
            const auto reference = fixture::params_of(*one[0]);
            for (int n : {2, 3}) {
                INFO(n << " replicas");
                fixture::TempDir dn;
                auto many = fixture::replicas(cfg, n);
                fixture::fit(cfg, many, data, dn.path.string());
                const auto weights = fixture::params_of(*many[0]);
                REQUIRE(fixture::relative_difference(reference, weights) <= 1e-5);
                // Identical optimizer steps on identical all-reduced gradients: replicas agree bit for bit.
                for (int r = 1; r < n; ++r) REQUIRE(fixture::params_of(*many[r]) == weights);
            }
        }
    }
}

TEST_CASE("Training learns the blobs, and evaluation agrees across replica counts") {
    data::DataSplits data;
    data.train = fixture::blobs(600, 4);
    const auto test = fixture::blobs(101, 8);
    const auto cfg = fixture::small_job(5, 16);
    fixture::TempDir dir;
    auto reps = fixture::replicas(cfg, 2);
    const auto result = fixture::fit(cfg, reps, data, dir.path.string());
    REQUIRE(result.history.size() == 5);
    REQUIRE(result.history.back().loss < result.history.front().loss);
    const auto two = train::evaluate(reps, test, 16, true);
    REQUIRE(two.samples == 101);
    REQUIRE(two.metric > 0.9);
    int64_t total = 0, diagonal = 0;
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 3; ++j) {
            total += two.confusion[static_cast<size_t>(i * 3 + j)];
            if (i == j) diagonal += two.confusion[static_cast<size_t>(i * 3 + j)];
        }
    REQUIRE(total == 101);
    REQUIRE(static_cast<double>(diagonal) / total == Approx(two.metric));

    // The same weights in three replicas score the same.
    auto three = fixture::replicas(cfg, 3);
    const auto weights = fixture::params_of(*reps[0]);
    for (auto& r : three) std::copy(weights.begin(), weights.end(), r->model().param_data());
    const auto other = train::evaluate(three, test, 16);
    REQUIRE(other.loss == Approx(two.loss).epsilon(1e-5));
    REQUIRE(other.metric == two.metric);

    // A batch larger than the replicas' input buffers (built for the
    // training batch) scores the same instead of overrunning them.
    const auto larger = train::evaluate(three, test, 256);
    REQUIRE(larger.samples == 101);
    REQUIRE(larger.loss == Approx(two.loss).epsilon(1e-5));
    REQUIRE(larger.metric == two.metric);
}

TEST_CASE("CPU replicas that copy their rows from the data set (data.resident) train the loader's weights exactly") {
    data::DataSplits data;
    data.train = fixture::blobs(47, 3);
    for (int64_t batch : {10, 2}) {
        for (int n : {1, 3}) {
            INFO(n << " replicas, batch " << batch);
            auto cfg = fixture::small_job(2, batch);
            cfg.data.resident = config::ResidentMode::off;
            fixture::TempDir d_loader;
            auto loader_fed = fixture::replicas(cfg, n);
            fixture::fit(cfg, loader_fed, data, d_loader.path.string());
            REQUIRE_FALSE(loader_fed[0]->resident());
            for (const config::ResidentMode mode : {config::ResidentMode::on, config::ResidentMode::automatic}) {
                INFO("data.resident " << config::name_of(mode));
                cfg.data.resident = mode;
                fixture::TempDir d_resident;
                auto resident = fixture::replicas(cfg, n);
                fixture::fit(cfg, resident, data, d_resident.path.string());
                REQUIRE(resident[0]->resident());
                for (int r = 0; r < n; ++r)
                    REQUIRE(fixture::params_of(*resident[r]) == fixture::params_of(*loader_fed[0]));
            }
        }
    }
}
