// Gradient buckets: the all-reduce cut into buckets started during backward
// must train exactly what one all-reduce after backward trains (the sums run
// in the same rank order), for any bucket size, replica count and empty shards.
#include "train/gradient_buckets.hpp"
#include "train_fixture.hpp"

using namespace gputrain;
using specs::layer;

namespace {

constexpr double kFloatsToMb = 4.0 / (1024.0 * 1024.0);

std::vector<std::vector<float>> train_with_buckets(config::RunConfig cfg, int replicas, double bucket_mb,
                                                   const data::DataSplits& data) {
    cfg.strategy.bucket_mb = bucket_mb;
    fixture::TempDir dir;
    auto reps = fixture::replicas(cfg, replicas);
    fixture::fit(cfg, reps, data, dir.path.string());
    std::vector<std::vector<float>> out;
    for (auto& r : reps) out.push_back(fixture::params_of(*r));
    return out;
}

}  // namespace

TEST_CASE("Bucket plans close a bucket at the first layer boundary past bucket_mb, from the last layer") {
    using R = train::GradientRange;
    // Layers of 224, 0, 528, 136 and 27 floats.
    const std::vector<size_t> offsets{0, 224, 224, 752, 888, 915};
    REQUIRE(train::plan_gradient_buckets(offsets, 0) == std::vector<R>{{0, 915}});
    // One bucket per layer with parameters.
    REQUIRE(train::plan_gradient_buckets(offsets, 1e-9) == std::vector<R>{{888, 915}, {752, 888}, {224, 752}, {0, 224}});
    // >= 150 floats: 27 + 136 close the first bucket, 528 the second, 224 is left.
    REQUIRE(train::plan_gradient_buckets(offsets, 150 * kFloatsToMb) ==
            std::vector<R>{{752, 915}, {224, 752}, {0, 224}});
    // >= 700 floats: 27 + 136 + 528 = 691 are not enough, so the first layer joins them.
    REQUIRE(train::plan_gradient_buckets(offsets, 700 * kFloatsToMb) == std::vector<R>{{0, 915}});
    REQUIRE(train::plan_gradient_buckets(offsets, 691 * kFloatsToMb) == std::vector<R>{{224, 915}, {0, 224}});
    REQUIRE(train::plan_gradient_buckets({0}, 1.0).empty());
}

TEST_CASE("A model reports every layer's gradients in backward order, and the bucket plan follows it") {
    const auto cfg = fixture::deep_job(8);
    auto reps = fixture::replicas(cfg, 1);
    nn::Model& model = reps[0]->model();
    REQUIRE(model.layer_param_offsets() == std::vector<size_t>{0, 224, 224, 752, 888, 915});
    const auto data = fixture::blobs(8, 1);
    std::vector<size_t> seen;
    nn::RunContext ctx{reps[0]->backend(), true, 1, 0, 0, 0, nullptr};
    reps[0]->load_shard(data.inputs.data(), data.labels.data(), 0, 8);
    model.forward_backward(ctx, reps[0]->inputs(), reps[0]->labels(), 8, 0.125f, reps[0]->stats(),
                           [&](size_t offset) { seen.push_back(offset); });
    REQUIRE(seen == std::vector<size_t>{888, 752, 224, 224, 0});
    seen.clear();
    model.forward_backward(ctx, nullptr, nullptr, 0, 0.125f, reps[0]->stats(),
                           [&](size_t offset) { seen.push_back(offset); });
    REQUIRE(seen == std::vector<size_t>{888, 752, 224, 224, 0});  // an empty shard starts the same buckets
}

TEST_CASE("Bucketed all-reduces during backward train bit-identical weights to one all-reduce after it") {
    for (int64_t batch : {10, 2}) {  // batch 2 over 3 replicas leaves a shard empty every step
        data::DataSplits data;
        data.train = fixture::blobs(47, 3);
        const auto cfg = fixture::deep_job(batch);
        for (int n : {2, 3}) {
            INFO(n << " replicas, batch " << batch);
            const auto reference = train_with_buckets(cfg, n, 0, data);
            for (int r = 1; r < n; ++r) REQUIRE(reference[r] == reference[0]);
            // One bucket per layer, three buckets, one bucket through the asynchronous path.
            for (double mb : {1e-9, 150 * kFloatsToMb, 1.0}) {
                INFO("bucket_mb " << mb);
                const auto bucketed = train_with_buckets(cfg, n, mb, data);
                for (int r = 0; r < n; ++r) REQUIRE(bucketed[r] == reference[0]);
            }
        }
    }
}

TEST_CASE("Buckets interleave with synchronized batch norm's own all-reduces in backward") {
    data::DataSplits data;
    data.train = fixture::blobs(47, 3);
    auto cfg = fixture::small_job(2, 10);
    cfg.model.layers = {layer("dense", {{"units", "8"}, {"use_bias", "false"}}),
                        layer("batch_norm", {{"sync", "true"}}),
                        layer("relu"),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    for (int n : {2, 3}) {
        INFO(n << " replicas");
        const auto reference = train_with_buckets(cfg, n, 0, data);
        const auto bucketed = train_with_buckets(cfg, n, 1e-9, data);
        for (int r = 0; r < n; ++r) REQUIRE(bucketed[r] == reference[0]);
    }
}
