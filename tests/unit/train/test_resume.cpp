#include <cmath>
#include <fstream>

#include "checkpoint/safetensors.hpp"
#include "core/error.hpp"
#include "train/checkpointer.hpp"
#include "train_fixture.hpp"

using namespace gputrain;
namespace fs = std::filesystem;

TEST_CASE("Resuming from a checkpoint ends with the same weights as an uninterrupted run") {
    data::DataSplits data;
    data.train = fixture::blobs(53, 6);
    for (const auto [n, optimizer] : {std::pair{1, config::OptimizerType::adam}, std::pair{2, config::OptimizerType::adam},
                                      std::pair{2, config::OptimizerType::rmsprop}}) {
        INFO(n << " replicas, " << config::name_of(optimizer));
        const auto cfg3 = fixture::small_job(3, 8, optimizer);
        fixture::TempDir straight, interrupted;
        auto a = fixture::replicas(cfg3, n);
        fixture::fit(cfg3, a, data, straight.path.string());

        const auto cfg1 = fixture::small_job(1, 8, optimizer);
        auto b = fixture::replicas(cfg1, n);
        fixture::fit(cfg1, b, data, interrupted.path.string());
        auto c = fixture::replicas(cfg3, n);
        const auto resumed = fixture::fit(cfg3, c, data, interrupted.path.string(),
                                          train::latest_checkpoint(interrupted.path.string()));
        REQUIRE(resumed.history.size() == 2);
        REQUIRE(resumed.history.front().epoch == 2);
        REQUIRE(fixture::params_of(*c[0]) == fixture::params_of(*a[0]));

        // metrics.csv: the header once, then one row per epoch across both runs.
        std::ifstream csv(interrupted.path / "metrics.csv");
        std::string line;
        std::vector<std::string> lines;
        while (std::getline(csv, line)) lines.push_back(line);
        REQUIRE(lines.size() == 4);
        REQUIRE(lines[0] == "epoch,loss,accuracy,val_loss,val_accuracy,learning_rate,seconds,samples_per_second");
        REQUIRE(lines[3].rfind("3,", 0) == 0);
    }
}

TEST_CASE("Checkpoint files: names, metadata, rotation and best") {
    data::DataSplits data;
    data.train = fixture::blobs(40, 2);
    auto cfg = fixture::small_job(4, 8);
    cfg.checkpoint.keep_last = 2;
    fixture::TempDir dir;
    auto reps = fixture::replicas(cfg, 1);
    fixture::fit(cfg, reps, data, dir.path.string());
    REQUIRE_FALSE(fs::exists(dir.path / "epoch-001.safetensors"));
    REQUIRE_FALSE(fs::exists(dir.path / "epoch-002.safetensors"));
    REQUIRE(fs::exists(dir.path / "epoch-003.safetensors"));
    REQUIRE(fs::exists(dir.path / "epoch-004.safetensors"));
    REQUIRE(fs::exists(dir.path / "best.safetensors"));
    for (const auto& entry : fs::directory_iterator(dir.path))
        REQUIRE(entry.path().filename().string().find(".tmp") == std::string::npos);

    const auto last = checkpoint::load((dir.path / "last.safetensors").string());
    REQUIRE(last.metadata.at("epoch") == "4");
    REQUIRE(last.metadata.at("global_step") == "20");
    REQUIRE(last.metadata.at("config_digest") == "test-digest");
    REQUIRE(last.metadata.at("optimizer") == "adam");
    REQUIRE(last.find("dense/kernel")->shape == std::vector<int64_t>{6, 16});
    REQUIRE(last.find("optimizer/adam_m/dense_1/bias")->shape == std::vector<int64_t>{3});
    const auto weights = fixture::params_of(*reps[0]);
    const auto* kernel = last.find("dense/kernel");
    REQUIRE(std::equal(kernel->data.begin(), kernel->data.end(), weights.begin()));
}

TEST_CASE("Loading a checkpoint into a different model names the tensor that differs") {
    data::DataSplits data;
    data.train = fixture::blobs(16, 2);
    const auto cfg = fixture::small_job(1, 8);
    fixture::TempDir dir;
    auto reps = fixture::replicas(cfg, 1);
    fixture::fit(cfg, reps, data, dir.path.string());
    const std::string path = (dir.path / "last.safetensors").string();

    auto wider = cfg;
    wider.model.layers[0].params["units"] = "17";
    auto other = fixture::replicas(wider, 1);
    try {
        train::restore(path, other, wider, true);
        FAIL("no error");
    } catch (const DataError& e) {
        REQUIRE(std::string(e.what()) == path + ": tensor 'dense/kernel' has shape [6, 16] but the model expects [6, 17]");
    }
    auto sgd = fixture::small_job(1, 8, config::OptimizerType::sgd);
    auto sgd_reps = fixture::replicas(sgd, 1);
    try {
        train::restore(path, sgd_reps, sgd, true);
        FAIL("no error");
    } catch (const DataError& e) {
        REQUIRE(std::string(e.what()) == path + ": tensor 'optimizer/velocity/dense/kernel' is missing: the "
                                                "checkpoint holds no such optimizer state (it was written with "
                                                "optimizer adam, now sgd); resume with the optimizer it was written with");
    }
    // Weights alone load into the same architecture whatever the optimizer.
    REQUIRE_NOTHROW(train::restore(path, sgd_reps, sgd, false));
}

TEST_CASE("A checkpoint holding NaN or Inf is refused on load, naming the tensor; a layer may be called 'optimizer'") {
    data::DataSplits data;
    data.train = fixture::blobs(16, 2);
    auto cfg = fixture::small_job(1, 8);
    cfg.model.layers[0].name = "optimizer";  // its tensors are optimizer/kernel and optimizer/bias
    fixture::TempDir dir;
    auto reps = fixture::replicas(cfg, 1);
    fixture::fit(cfg, reps, data, dir.path.string());
    const std::string path = (dir.path / "last.safetensors").string();
    auto weights_only = fixture::replicas(cfg, 1);
    REQUIRE_NOTHROW(train::restore(path, weights_only, cfg, false));
    REQUIRE(fixture::params_of(*weights_only[0]) == fixture::params_of(*reps[0]));

    for (const char* name : {"optimizer/bias", "optimizer/adam_v/dense/kernel"}) {
        INFO(name);
        auto contents = checkpoint::load(path);
        for (auto& t : contents.tensors)
            if (t.name == name) t.data[2] = std::string(name) == "optimizer/bias" ? NAN : INFINITY;
        const std::string bad = (dir.path / "bad.safetensors").string();
        fixture::save_contents(contents, bad);
        auto again = fixture::replicas(cfg, 1);
        const auto before = fixture::params_of(*again[0]);
        REQUIRE_THROWS_WITH(train::restore(bad, again, cfg, true),
                            bad + ": tensor '" + name + "' holds " +
                                (std::string(name) == "optimizer/bias" ? "NaN" : "Inf") +
                                " at index 2; the file is damaged, use an earlier checkpoint");
        REQUIRE(fixture::params_of(*again[0]) == before);  // nothing written into the replica
    }
}

TEST_CASE("A checkpoint keeps its resolved config; restore names the keys a later config changed") {
    data::DataSplits data;
    data.train = fixture::blobs(16, 2);
    auto cfg = fixture::small_job(1, 8);
    cfg.resolved_yaml = "optimizer: {type: adam, learning_rate: 0.01}\ntraining: {epochs: 1, batch_size: 8}\n";
    fixture::TempDir dir;
    auto reps = fixture::replicas(cfg, 1);
    fixture::fit(cfg, reps, data, dir.path.string());
    const std::string path = (dir.path / "last.safetensors").string();
    REQUIRE(checkpoint::load(path).metadata.at("config") == cfg.resolved_yaml);
    {
        // Bytes that are not UTF-8 (a Latin-1 path): safetensors' JSON cannot hold them; the digest stays.
        auto latin1 = cfg;
        latin1.resolved_yaml = "run_dir: /tmp/caf\xe9\n";
        fixture::TempDir other;
        auto r = fixture::replicas(latin1, 1);
        fixture::fit(latin1, r, data, other.path.string());
        const auto meta = checkpoint::load((other.path / "last.safetensors").string()).metadata;
        CHECK(meta.count("config") == 0);
        CHECK(meta.at("config_digest") == "test-digest");
    }

    auto later = cfg;
    later.digest = "other-digest";
    later.resolved_yaml = "optimizer: {type: adam, learning_rate: 0.1}\ntraining: {epochs: 5, batch_size: 8}\n";
    auto again = fixture::replicas(later, 1);
    std::string warning;
    const auto state = train::restore(path, again, later, true, &warning);
    REQUIRE(state.config_yaml == cfg.resolved_yaml);
    // More epochs is what a resume is for: not named.
    REQUIRE(warning == path + " was written with a different config (optimizer.learning_rate: 0.01 -> 0.1); "
                              "continuing with the current config");

    // A checkpoint from before configs were stored: the digests.
    auto contents = checkpoint::load(path);
    contents.metadata.erase("config");
    const std::string old_path = (dir.path / "old.safetensors").string();
    fixture::save_contents(contents, old_path);
    warning.clear();
    REQUIRE(train::restore(old_path, again, later, true, &warning).config_yaml.empty());
    REQUIRE(warning == old_path + " was written with a different config (digest test-digest, now other-digest); "
                                  "continuing with the current config");
    // ... unless it is the digest an earlier gputrain gave this config (before layer defaults were resolved).
    later.digest_of_layers_as_given = "test-digest";
    warning.clear();
    train::restore(old_path, again, later, true, &warning);
    REQUIRE(warning.empty());
}

TEST_CASE("keep_last and the latest checkpoint go by epoch number past epoch 999; later files of another run are "
          "left alone") {
    data::DataSplits data;
    data.train = fixture::blobs(16, 6);
    auto cfg = fixture::small_job(1002, 8);
    cfg.checkpoint.keep_last = 2;
    fixture::TempDir dir;
    auto reps = fixture::replicas(cfg, 1);
    train::Checkpointer checkpointer(cfg, dir.path.string());
    train::TrainingState state;
    for (int64_t epoch : {998, 999, 1000, 1001}) {
        state.epochs_done = epoch;
        checkpointer.save_epoch(*reps[0], state, train::EpochRecord{}, {}, false);
    }
    CHECK(fs::exists(dir.path / "epoch-1000.safetensors"));
    CHECK(fs::exists(dir.path / "epoch-1001.safetensors"));
    CHECK(!fs::exists(dir.path / "epoch-999.safetensors"));
    CHECK(!fs::exists(dir.path / "epoch-998.safetensors"));
    fs::remove(dir.path / "last.safetensors");
    CHECK(train::latest_checkpoint(dir.path.string()) == (dir.path / "epoch-1001.safetensors").string());
    // A resume from an older epoch: epoch 5 written again, 1000 and 1001 (the abandoned run's) kept, not counted.
    state.epochs_done = 4;
    checkpointer.save_epoch(*reps[0], state, train::EpochRecord{}, {}, false);
    state.epochs_done = 5;
    checkpointer.save_epoch(*reps[0], state, train::EpochRecord{}, {}, false);
    CHECK(fs::exists(dir.path / "epoch-004.safetensors"));
    CHECK(fs::exists(dir.path / "epoch-005.safetensors"));
    CHECK(fs::exists(dir.path / "epoch-1001.safetensors"));
    // What a resume from epoch 5 is told about (a best file of epoch 1001 would be listed too).
    CHECK(checkpointer.files_past(5) == std::vector<std::string>{"epoch-1000.safetensors", "epoch-1001.safetensors"});
    state.epochs_done = 1001;
    state.has_best = true;
    checkpointer.save_epoch(*reps[0], state, train::EpochRecord{}, {}, true);
    CHECK(checkpointer.files_past(5).back() == "best.safetensors");
    CHECK(checkpointer.files_past(1001).empty());
}

TEST_CASE("a resume whose checkpoint.monitor differs starts best over; the same monitor keeps its best") {
    data::DataSplits data;
    data.train = fixture::blobs(53, 6);
    auto cfg = fixture::small_job(2, 8);
    cfg.checkpoint.monitor = config::Monitor::accuracy;
    fixture::TempDir dir;
    auto a = fixture::replicas(cfg, 1);
    fixture::fit(cfg, a, data, dir.path.string());
    const auto first = checkpoint::load((dir.path / "best.safetensors").string());
    REQUIRE(first.metadata.at("best_of") == "accuracy max");

    auto by_loss = fixture::small_job(3, 8);
    by_loss.checkpoint.monitor = config::Monitor::loss;
    auto b = fixture::replicas(by_loss, 1);
    fixture::fit(by_loss, b, data, dir.path.string(), train::latest_checkpoint(dir.path.string()));
    // Epoch 3 is the first of the new run measured by loss: it is the best, whatever the accuracy was.
    const auto best = checkpoint::load((dir.path / "best.safetensors").string());
    CHECK(best.metadata.at("epoch") == "3");
    CHECK(best.metadata.at("best_of") == "loss min");
}
