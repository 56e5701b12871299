// Batch norm across replicas: with sync: true, N replicas train exactly what
// one replica trains on the same global batch (empty shards included); with
// sync: false every replica still ends with the same state. A CNN checkpoint
// round-trips its moving statistics, and evaluation uses them.
#include "checkpoint/safetensors.hpp"
#include "core/error.hpp"
#include "train/checkpointer.hpp"
#include "train/evaluator.hpp"
#include "train_fixture.hpp"

using namespace gputrain;
using specs::layer;

namespace {

// The layer before a batch norm has no bias: batch norm removes it, so its
// gradient is rounding noise, which Adam would turn into full-size steps that
// differ between replica counts (as Keras advises, use_bias: false there).

// dense -> batch_norm -> relu -> dropout -> dense (blobs are 6 features)
config::RunConfig dense_bn_job(int64_t batch, const std::string& sync) {
    auto cfg = fixture::small_job(2, batch);
    cfg.model.layers = {layer("dense", {{"units", "8"}, {"use_bias", "false"}}),
                        layer("batch_norm", {{"sync", sync}}),
                        layer("relu"),
                        layer("dropout", {{"rate", "0.25"}}),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    return cfg;
}

// The 6 features as a 3x2 image -> conv2d -> batch_norm -> pooling -> dense
config::RunConfig cnn_bn_job(int64_t batch, const std::string& sync, const std::string& filters = "4") {
    auto cfg = fixture::small_job(2, batch);
    cfg.model.layers = {layer("reshape", {{"target_shape", "3,2,1"}}),
                        layer("conv2d", {{"filters", filters}, {"kernel_size", "2"}, {"padding", "same"},
                                         {"use_bias", "false"}}),
                        layer("batch_norm", {{"sync", sync}, {"momentum", "0.9"}}),
                        layer("relu"),
                        layer("max_pool2d", {{"pool_size", "2,1"}, {"padding", "same"}}),
                        layer("flatten"),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    return cfg;
}

std::vector<float> state_of(train::Replica& r) {
    return std::vector<float>(r.model().state_data(), r.model().state_data() + r.model().state_count());
}

}  // namespace

TEST_CASE("sync batch_norm: N replicas train the same weights and moving statistics as one") {
    data::DataSplits data;
    data.train = fixture::blobs(47, 3);  // 4 batches of 10 + 7; with batch 2, 23 of 2 + 1
    for (const std::string model : {"dense", "cnn", "residual"}) {
        for (int64_t batch : {10, 2}) {  // batch 2 over 3 replicas leaves one shard empty every step
            INFO(model << " model, batch " << batch);
            const auto cfg = model == "dense" ? dense_bn_job(batch, "true")
                             : model == "cnn" ? cnn_bn_job(batch, "true")
                                              : fixture::residual_job(batch, "true");
            fixture::TempDir d1;
            auto one = fixture::replicas(cfg, 1);
            fixture::fit(cfg, one, data, d1.path.string());
            const auto weights = fixture::params_of(*one[0]);
            const auto state = state_of(*one[0]);
            REQUIRE(state.size() == (model == "dense" ? 16u : model == "cnn" ? 8u : 16u));  // mean and variance per channel
            for (int n : {2, 3}) {
                INFO(n << " replicas");
                fixture::TempDir dn;
                auto many = fixture::replicas(cfg, n);
                fixture::fit(cfg, many, data, dn.path.string());
                REQUIRE(fixture::relative_difference(weights, fixture::params_of(*many[0])) <= 1e-5);
                REQUIRE(fixture::relative_difference(state, state_of(*many[0])) <= 1e-5);
                for (int r = 1; r < n; ++r) {
                    REQUIRE(fixture::params_of(*many[r]) == fixture::params_of(*many[0]));
                    REQUIRE(state_of(*many[r]) == state_of(*many[0]));
                }
            }
        }
    }
}

TEST_CASE("batch_norm without sync: per-replica statistics, yet every replica holds the same state") {
    data::DataSplits data;
    data.train = fixture::blobs(47, 3);
    const auto cfg = cnn_bn_job(10, "false");
    fixture::TempDir d1, d2;
    auto one = fixture::replicas(cfg, 1);
    fixture::fit(cfg, one, data, d1.path.string());
    auto two = fixture::replicas(cfg, 2);
    fixture::fit(cfg, two, data, d2.path.string());
    REQUIRE(fixture::params_of(*two[1]) == fixture::params_of(*two[0]));
    REQUIRE(state_of(*two[1]) == state_of(*two[0]));
    // Shard statistics are not the global batch's: the runs part (what sync: true repairs).
    REQUIRE(fixture::relative_difference(fixture::params_of(*one[0]), fixture::params_of(*two[0])) > 1e-4);
    REQUIRE(fixture::relative_difference(state_of(*one[0]), state_of(*two[0])) > 1e-4);
}

TEST_CASE("Evaluation normalizes with the moving statistics: the score does not depend on the batch size") {
    data::DataSplits data;
    data.train = fixture::blobs(200, 4);
    const auto test = fixture::blobs(37, 9);
    const auto cfg = cnn_bn_job(16, "false");
    fixture::TempDir dir;
    auto reps = fixture::replicas(cfg, 1);
    fixture::fit(cfg, reps, data, dir.path.string());
    const auto before = state_of(*reps[0]);
    const auto whole = train::evaluate(reps, test, 16);  // at most the training batch: the buffers' size
    const auto small = train::evaluate(reps, test, 5);
    const auto single = train::evaluate(reps, test, 1);  // batch statistics of one sample would zero the features
    REQUIRE(small.loss == Approx(whole.loss).epsilon(1e-5));
    REQUIRE(single.loss == Approx(whole.loss).epsilon(1e-5));
    REQUIRE(single.metric == whole.metric);
    REQUIRE(whole.metric > 0.8);
    REQUIRE(state_of(*reps[0]) == before);  // evaluation leaves the moving statistics alone
}

TEST_CASE("A CNN checkpoint round-trips its weights and moving statistics; another architecture is refused") {
    data::DataSplits data;
    data.train = fixture::blobs(60, 5);
    const auto test = fixture::blobs(30, 6);
    const auto cfg = cnn_bn_job(8, "true");
    fixture::TempDir dir;
    auto trained = fixture::replicas(cfg, 2);
    fixture::fit(cfg, trained, data, dir.path.string());
    const std::string last = (dir.path / "last.safetensors").string();

    const auto contents = checkpoint::load(last);
    const auto* mean = contents.find("batch_norm/moving_mean");
    const auto* var = contents.find("batch_norm/moving_variance");
    REQUIRE(mean);
    REQUIRE(var);
    REQUIRE(mean->shape == std::vector<int64_t>{4});
    std::vector<float> saved = mean->data;
    saved.insert(saved.end(), var->data.begin(), var->data.end());
    REQUIRE(saved == state_of(*trained[0]));
    REQUIRE(contents.find("optimizer/adam_m/batch_norm/gamma"));
    REQUIRE_FALSE(contents.find("optimizer/adam_m/batch_norm/moving_mean"));  // state has no optimizer slots

    auto fresh = fixture::replicas(cfg, 3);
    REQUIRE(state_of(*fresh[0]) != state_of(*trained[0]));
    train::restore(last, fresh, cfg, /*with_optimizer=*/true);
    for (auto& r : fresh) {
        REQUIRE(fixture::params_of(*r) == fixture::params_of(*trained[0]));
        REQUIRE(state_of(*r) == state_of(*trained[0]));
    }
    const auto a = train::evaluate(trained, test, 8), b = train::evaluate(fresh, test, 8);
    REQUIRE(b.loss == Approx(a.loss).epsilon(1e-6));
    REQUIRE(b.metric == a.metric);

    const auto other = cnn_bn_job(8, "true", "5");
    auto wrong = fixture::replicas(other, 1);
    try {
        train::restore(last, wrong, other, false);
        FAIL("no error");
    } catch (const DataError& e) {
        REQUIRE(std::string(e.what()) ==
                last + ": tensor 'conv2d/kernel' has shape [4, 2, 2, 1] but the model expects [5, 2, 2, 1]");
    }
}
