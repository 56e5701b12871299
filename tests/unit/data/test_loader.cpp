#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "data/loader.hpp"

using namespace gputrain;
using namespace gputrain::data;

namespace {

// Sample i holds the values i*10 .. i*10+2 and the label i % 7, so every row names its sample.
Dataset numbered_dataset(int64_t n) {
    Dataset d;
    d.sample_shape = {3};
    d.num_classes = 7;
    for (int64_t i = 0; i < n; ++i) {
        for (int e = 0; e < 3; ++e) d.inputs.push_back(static_cast<float>(i * 10 + e));
        d.labels.push_back(static_cast<int32_t>(i % 7));
    }
    return d;
}

int64_t sample_of(const Batch& b, int64_t row) { return static_cast<int64_t>(b.inputs[row * 3]) / 10; }

// What batch `step` must hold: rows order[step*batch ..], computed without the Loader.
void require_direct_gather(const Dataset& d, const Batch& b, const std::vector<int64_t>& order, int64_t step,
                           int64_t global_batch, int replicas) {
    const int64_t begin = step * global_batch;
    const int64_t size = std::min(global_batch, d.size() - begin);
    REQUIRE(b.step == step);
    REQUIRE(b.size == size);
    REQUIRE(b.shard_begin == shard_offsets(size, replicas));
    for (int64_t row = 0; row < size; ++row) {
        const int64_t sample = order[begin + row];
        REQUIRE(b.labels[row] == d.labels[sample]);
        for (int e = 0; e < 3; ++e) REQUIRE(b.inputs[row * 3 + e] == d.inputs[sample * 3 + e]);
    }
}

}  // namespace

TEST_CASE("shard_offsets splits as evenly as possible, extra rows first") {
    REQUIRE(shard_offsets(10, 3) == std::vector<int64_t>{0, 4, 7, 10});
    REQUIRE(shard_offsets(2, 3) == std::vector<int64_t>{0, 1, 2, 2});
    REQUIRE(shard_offsets(9, 3) == std::vector<int64_t>{0, 3, 6, 9});
    REQUIRE(shard_offsets(5, 1) == std::vector<int64_t>{0, 5});
    REQUIRE(shard_offsets(0, 2) == std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("epoch_order is a reproducible permutation that changes with the epoch") {
    const auto a = epoch_order(1000, true, 42, 0);
    auto sorted = a;
    std::sort(sorted.begin(), sorted.end());
    REQUIRE(sorted == epoch_order(1000, false, 42, 0));
    REQUIRE(a == epoch_order(1000, true, 42, 0));
    REQUIRE(a != epoch_order(1000, true, 42, 1));
    REQUIRE(a != epoch_order(1000, true, 43, 0));
    REQUIRE(a != sorted);
    REQUIRE(epoch_order(0, true, 1, 0).empty());
}

TEST_CASE("epoch_order keeps the Fisher-Yates shuffle of the seed's stream below the limit") {
    // The order every run before the computed one had: written out here from the generator.
    const int64_t n = 50;
    std::vector<int64_t> expected(n);
    for (int64_t i = 0; i < n; ++i) expected[static_cast<size_t>(i)] = i;
    Rng rng = Rng(9).split(4);
    for (int64_t i = n - 1; i > 0; --i)
        std::swap(expected[static_cast<size_t>(i)], expected[static_cast<size_t>(rng.below(static_cast<uint64_t>(i + 1)))]);
    REQUIRE(epoch_order(n, true, 9, 4) == expected);
    REQUIRE_FALSE(EpochOrder(n, true, 9, 4).computed());
}

TEST_CASE("EpochOrder above its limit: a computed permutation, reproducible, new each epoch, evenly spread") {
    for (int64_t n : {2, 3, 5, 17, 64, 1000, 4097, 65537}) {
        INFO("n " << n);
        const EpochOrder order(n, true, 42, 0, /*materialized_limit=*/1);
        REQUIRE(order.computed());
        REQUIRE(order.size() == n);
        std::vector<int64_t> seen(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) seen[static_cast<size_t>(i)] = order[i];
        std::vector<int64_t> sorted = seen;
        std::sort(sorted.begin(), sorted.end());
        for (int64_t i = 0; i < n; ++i) REQUIRE(sorted[static_cast<size_t>(i)] == i);  // each sample exactly once
        const EpochOrder again(n, true, 42, 0, 1), next(n, true, 42, 1, 1), other_seed(n, true, 43, 0, 1);
        bool differs_next = false, differs_seed = false, moved = false;
        for (int64_t i = 0; i < n; ++i) {
            REQUIRE(again[i] == order[i]);
            differs_next |= next[i] != order[i];
            differs_seed |= other_seed[i] != order[i];
            moved |= order[i] != i;
        }
        if (n > 2) {  // two samples have only two orders
            REQUIRE(differs_next);
            REQUIRE(differs_seed);
            REQUIRE(moved);
        }
    }
    // Without shuffle: the identity, computed or not.
    const EpochOrder plain(100, false, 42, 0, 1);
    for (int64_t i = 0; i < 100; ++i) REQUIRE(plain[i] == i);
    // Where sample 0 lands over 4,000 epochs of 8 samples: each place about 500 times
    // (binomial sd 21; a 6-sd band).
    std::vector<int> place_of_zero(8, 0);
    for (int64_t epoch = 0; epoch < 4000; ++epoch) {
        const EpochOrder o(8, true, 5, epoch, 1);
        for (int64_t i = 0; i < 8; ++i)
            if (o[i] == 0) ++place_of_zero[static_cast<size_t>(i)];
    }
    for (int count : place_of_zero) {
        REQUIRE(count > 375);
        REQUIRE(count < 625);
    }
}

TEST_CASE("EpochOrder of five billion windows costs no memory; its places are distinct and in range") {
    const int64_t n = 5'000'000'000;
    const EpochOrder order(n, true, 1, 0);
    REQUIRE(order.computed());
    std::vector<int64_t> first(20000);
    for (int64_t i = 0; i < 20000; ++i) {
        first[static_cast<size_t>(i)] = order[i];
        REQUIRE(first[static_cast<size_t>(i)] >= 0);
        REQUIRE(first[static_cast<size_t>(i)] < n);
    }
    std::sort(first.begin(), first.end());
    REQUIRE(std::adjacent_find(first.begin(), first.end()) == first.end());
    REQUIRE(first.back() > n / 2);  // spread over the range, not the first places
}

TEST_CASE("Loader: 3 replica threads see every sample once per epoch, batches as gathered directly") {
    const Dataset d = numbered_dataset(103);
    const int64_t global_batch = 10;
    const int replicas = 3;
    Loader loader(d, global_batch, replicas, true, 7, 2);
    REQUIRE(loader.steps_per_epoch() == 11);
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
        loader.start_epoch(epoch);
        std::vector<std::vector<int64_t>> seen(replicas);
        std::vector<std::vector<std::shared_ptr<const Batch>>> batches(replicas);
        std::vector<std::thread> threads;
        for (int r = 0; r < replicas; ++r) {
            threads.emplace_back([&, r] {
                for (int64_t step = 0; step < loader.steps_per_epoch(); ++step) {
                    auto batch = loader.get(step);
                    for (int64_t row = batch->shard_begin[r]; row < batch->shard_begin[r + 1]; ++row) {
                        seen[r].push_back(sample_of(*batch, row));
                    }
                    batches[r].push_back(std::move(batch));
                }
            });
        }
        for (auto& t : threads) t.join();

        std::vector<int64_t> all;
        for (const auto& s : seen) all.insert(all.end(), s.begin(), s.end());
        std::sort(all.begin(), all.end());
        REQUIRE(all == epoch_order(103, false, 0, 0));
        const auto order = epoch_order(103, true, 7, epoch);
        for (int r = 0; r < replicas; ++r) {
            REQUIRE(batches[r].size() == 11);
            for (int64_t step = 0; step < 11; ++step) {
                REQUIRE(batches[r][step] == batches[0][step]);  // one shared batch per step
                if (r == 0) require_direct_gather(d, *batches[0][step], order, step, global_batch, replicas);
            }
        }
    }
}

TEST_CASE("Loader resumed at first_step gives the tail of the full epoch") {
    const Dataset d = numbered_dataset(50);
    Loader full(d, 8, 1, true, 3);
    Loader resumed(d, 8, 1, true, 3);
    full.start_epoch(4);
    resumed.start_epoch(4, 3);
    for (int64_t step = 0; step < full.steps_per_epoch(); ++step) {
        const auto expected = full.get(step);
        if (step < 3) continue;
        const auto got = resumed.get(step);
        REQUIRE(got->labels == expected->labels);
        REQUIRE(got->inputs == expected->inputs);
    }
    REQUIRE_THROWS_AS(resumed.get(2), Error);
    REQUIRE_THROWS_AS(resumed.get(full.steps_per_epoch()), Error);
}

TEST_CASE("Loader without shuffle keeps file order; the last batch is smaller") {
    const Dataset d = numbered_dataset(7);
    Loader loader(d, 3, 2, false, 0);
    loader.start_epoch(0);
    const auto last = loader.get(2);
    REQUIRE(loader.get(2) == last);
    REQUIRE_THROWS_WITH(loader.get(2), "Loader::get: step 2 requested more than 2 times");
    REQUIRE(last->size == 1);
    REQUIRE(sample_of(*last, 0) == 6);
    REQUIRE(last->shard_begin == std::vector<int64_t>{0, 1, 1});
}

TEST_CASE("Loader stops without hanging when batches are never taken") {
    const Dataset d = numbered_dataset(1000);
    const auto started = std::chrono::steady_clock::now();
    {
        Loader loader(d, 4, 2, true, 1, 3);
        loader.start_epoch(0);
        loader.get(0);  // one replica only: step 0 is never released
        loader.start_epoch(1, 5);
        loader.get(5);
        loader.get(5);
        loader.get(6);
    }
    {
        Loader never_started(d, 4, 2, true, 1);
        REQUIRE_THROWS_AS(never_started.get(0), Error);
    }
    REQUIRE(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
}

TEST_CASE("Loaders of two workers: the same global batches, 4 shards, each released after its own 2 replicas") {
    // A worker with 2 of 4 global replicas: shard_begin covers all 4, but a
    // batch is taken by (and released after) this worker's 2 replicas only.
    const Dataset d = numbered_dataset(23);
    Loader worker0(d, 8, 4, true, 11, /*prefetch_depth=*/1, /*consumers=*/2);
    Loader worker1(d, 8, 4, true, 11, /*prefetch_depth=*/1, /*consumers=*/2);
    worker0.start_epoch(2);
    worker1.start_epoch(2);
    std::vector<int64_t> seen;
    for (int64_t step = 0; step < worker0.steps_per_epoch(); ++step) {
        const auto a = worker0.get(step), b = worker1.get(step);
        REQUIRE(worker0.get(step) == a);  // the second consumer
        REQUIRE(worker1.get(step) == b);
        REQUIRE_THROWS_WITH(worker0.get(step), "Loader::get: step " + std::to_string(step) +
                                                   " was already taken by all 2 replicas");
        REQUIRE(a->labels == b->labels);
        REQUIRE(a->inputs == b->inputs);
        REQUIRE(a->shard_begin == shard_offsets(a->size, 4));
        // Worker 0 owns global replicas 0-1, worker 1 owns 2-3: together every row once.
        for (int64_t row = a->shard_begin[0]; row < a->shard_begin[2]; ++row) seen.push_back(sample_of(*a, row));
        for (int64_t row = b->shard_begin[2]; row < b->shard_begin[4]; ++row) seen.push_back(sample_of(*b, row));
    }
    std::sort(seen.begin(), seen.end());
    REQUIRE(seen == epoch_order(23, false, 0, 0));
}

TEST_CASE("An index-only Loader gives each step's size and shards without rows, from any first step") {
    const Dataset d = numbered_dataset(23);  // batches of 5: four full, a last of 3
    Loader gathering(d, 5, 3, true, 9);
    Loader index_only(d, 5, 3, true, 9);
    index_only.set_index_only(true);
    for (int64_t first : {0, 2}) {
        gathering.start_epoch(1, first);
        index_only.start_epoch(1, first);
        for (int64_t step = first; step < index_only.steps_per_epoch(); ++step) {
            INFO("first step " << first << ", step " << step);
            std::shared_ptr<const Batch> full;
            for (int consumer = 0; consumer < 3; ++consumer) full = gathering.get(step);
            const auto bare = index_only.get(step);
            REQUIRE(bare->step == full->step);
            REQUIRE(bare->size == full->size);
            REQUIRE(bare->shard_begin == full->shard_begin);
            REQUIRE(bare->first_row == 0);
            REQUIRE(bare->inputs.empty());
            REQUIRE(bare->labels.empty());
        }
        REQUIRE_THROWS_WITH(index_only.get(5), "Loader::get: step 5 is outside epoch 1 (steps " + std::to_string(first) +
                                                   "..4)");
    }
    // Back to gathering: rows again.
    index_only.set_index_only(false);
    index_only.start_epoch(0);
    REQUIRE(index_only.get(0)->labels.size() == 5);
}

TEST_CASE("several loader workers gather the batches one worker gathers, also from a step in the middle") {
    const Dataset d = numbered_dataset(103);
    for (const int64_t first_step : {int64_t{0}, int64_t{4}}) {
        Loader one(d, 10, 2, true, 9, 4, 1, 1);
        Loader three(d, 10, 2, true, 9, 2, 1, 3);
        for (const int64_t epoch : {0, 1}) {
            one.start_epoch(epoch, first_step);
            three.start_epoch(epoch, first_step);
            for (int64_t step = first_step; step < one.steps_per_epoch(); ++step) {
                const auto a = one.get(step);
                const auto b = three.get(step);
                REQUIRE(a->step == b->step);
                REQUIRE(a->epoch == b->epoch);
                REQUIRE(a->inputs == b->inputs);
                REQUIRE(a->labels == b->labels);
                REQUIRE(a->ids == b->ids);
                require_direct_gather(d, *b, epoch_order(103, true, 9, epoch), step, 10, 2);
            }
        }
    }
}
