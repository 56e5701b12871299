// The memory check before CPU replicas are built, and the sizes it is made
// from: counted on a backend that allocates nothing.
#include <catch2/catch.hpp>

#include <cstdint>

#include "backend/cpu/sizing_backend.hpp"
#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "nn/model.hpp"
#include "train/memory_estimate.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

TEST_CASE("estimate_memory: the small job's sizes by hand; the largest layer") {
    const auto cfg = fixture::small_job(1, 8);
    const auto m = train::estimate_memory(cfg, 8);
    const size_t params = 6 * 16 + 16 + 16 * 3 + 3;
    CHECK(m.params == params);
    CHECK(m.weight_bytes == 4 * params);
    CHECK(m.optimizer_bytes == 8 * params);
    CHECK(m.largest_layer == 0);
    CHECK(m.largest_layer_params == 6 * 16 + 16);
}

TEST_CASE("A model of hundreds of gigabytes is sized without taking memory") {
    auto cfg = fixture::small_job(1, 8);
    cfg.model.input_shape = {4096};
    // Three kernels of 1.6e10 parameters, 262 GB each with gradients and Adam's two moments.
    cfg.model.layers = {specs::layer("dense", {{"units", "4000000"}, {"activation", "relu"}}),
                        specs::layer("dense", {{"units", "4096"}, {"activation", "relu"}}),
                        specs::layer("dense", {{"units", "4000000"}, {"activation", "relu"}}),
                        specs::layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    const auto m = train::estimate_memory(cfg, 8);
    const size_t big = size_t{4096} * 4000000 + 4000000;
    CHECK(m.params == big + (size_t{4000000} * 4096 + 4096) + big + (size_t{4000000} * 3 + 3));
    CHECK(m.total_bytes() > size_t{700} << 30);  // about 733 GiB
    CHECK(m.largest_layer == 0);  // the first of two equal ones

    SizingBackend sizing;
    {
        const nn::Model model(cfg.model, cfg.loss, sizing, 8, 1);
        CHECK(sizing.allocated_bytes() >= 2 * 4 * m.params);  // weights and gradients at least
    }
}

TEST_CASE("check_host_memory: silent when it fits or nothing is known; else what to lower") {
    auto cfg = fixture::small_job(1, 8);
    const auto m = train::estimate_memory(cfg, 1);
    const size_t each = m.total_bytes();
    CHECK_NOTHROW(train::check_host_memory(cfg, m, 2, 2 * each));
    CHECK_NOTHROW(train::check_host_memory(cfg, m, 2, 0));
    // Weights and optimizer state dominate at 1 sample: the largest layer.
    REQUIRE_THROWS_WITH(train::check_host_memory(cfg, m, 1, each - 1),
                        Catch::StartsWith("not enough memory on the CPU: the model needs ") &&
                            Catch::Contains("is available (MemAvailable + SwapFree, within any cgroup or ulimit -v limit); the largest layer is "
                                            "model.layers[0] (dense, 112 parameters, test.yaml:3:7): make it smaller") &&
                            !Catch::Contains("--replicas"));
    REQUIRE_THROWS_WITH(train::check_host_memory(cfg, m, 2, 2 * each - 1),
                        Catch::StartsWith("not enough memory on the CPU: 2 replicas need ") &&
                            Catch::EndsWith("make it smaller, or use fewer replicas (--replicas)"));
    // Activations dominate at a large batch: training.batch_size.
    const auto wide = train::estimate_memory(cfg, 100000);
    REQUIRE_THROWS_WITH(train::check_host_memory(cfg, wide, 1, 1000),
                        Catch::Contains("activations and scratch at 100000 samples") &&
                            Catch::EndsWith("; lower training.batch_size"));
}

TEST_CASE("host_memory_available reads /proc/meminfo") {
    const size_t available = host_memory_available();
    CHECK(available > 0);  // Linux
    CHECK(available < (size_t{1} << 50));
}

TEST_CASE("check_device_memory: one GPU replica against the memory free on it") {
    auto cfg = fixture::small_job(1, 8);
    const auto m = train::estimate_memory(cfg, 1, /*on_gpu=*/true);
    CHECK_NOTHROW(train::check_device_memory(cfg, m, "cuda:0", m.total_bytes()));
    CHECK_NOTHROW(train::check_device_memory(cfg, m, "cuda:0", 0));  // unknown
    REQUIRE_THROWS_WITH(train::check_device_memory(cfg, m, "cuda:1", 1000),
                        Catch::StartsWith("cuda:1: not enough GPU memory: the model needs at least ") &&
                            Catch::Contains("(weights, gradients and adam state 2.55 KiB, activations and scratch at "
                                            "1 sample ") &&
                            Catch::Contains("the GPU libraries' workspaces come on top), but 1000 B is free; the "
                                            "largest layer is model.layers[0] (dense, 112 parameters, test.yaml:3:7)"));
}

TEST_CASE("check_host_memory counts a checkpoint to read back on top of the replicas") {
    auto cfg = fixture::small_job(1, 8);
    const auto m = train::estimate_memory(cfg, 1);
    const size_t each = m.total_bytes();
    CHECK_NOTHROW(train::check_host_memory(cfg, m, 1, each + 500, 500));
    REQUIRE_THROWS_WITH(train::check_host_memory(cfg, m, 1, each + 500, 501),
                        Catch::Contains("), with 501 B to read the checkpoint, but "));
}

TEST_CASE("Replicas for inference keep no optimizer state, and are sized without it") {
    auto cfg = fixture::small_job(1, 8);
    const auto training = train::estimate_memory(cfg, 1);
    const auto inference = train::estimate_memory(cfg, 1, false, /*with_optimizer=*/false);
    CHECK(training.optimizer_bytes == 2 * training.weight_bytes);  // Adam's m and v
    CHECK(inference.optimizer_bytes == 0);
    CHECK(inference.gradient_bytes == 0);
    CHECK(training.gradient_bytes == training.weight_bytes);
    // Two activation buffers of the widest output (16 per sample) instead of
    // every output (dense 16, dropout 16, dense 3) and two gradient buffers of the widest.
    CHECK(inference.activation_bytes == 4 * 2 * 16);
    CHECK(training.activation_bytes == 4 * (16 + 16 + 3 + 2 * 16));
    CHECK(training.total_bytes() - inference.total_bytes() ==
          training.optimizer_bytes + training.gradient_bytes + 4 * (16 + 16 + 3));
    REQUIRE_THROWS_WITH(train::check_host_memory(cfg, inference, 1, 100),
                        Catch::Contains("(weights 652 B, activations"));

    device::Discovery none;
    none.cpu.logical_cores = 1;
    const train::Strategy strategy(cfg, none, {"cpu", 1});
    auto reps = strategy.make_replicas(cfg, 8, "", train::ReplicaUse::inference);
    REQUIRE_THROWS_WITH(reps[0]->optimizer(), "internal: the optimizer of a replica built for inference");
}

TEST_CASE("human_bytes: two decimals below 10, one above; the device table's style; up to exbibytes") {
    CHECK(human_bytes(512) == "512 B");
    CHECK(human_bytes(size_t{3} << 19) == "1.50 MiB");
    CHECK(human_bytes(size_t{3} << 29, true) == "1.5 GiB");
    CHECK(human_bytes(size_t{397} << 10) == "397.0 KiB");
    CHECK(human_bytes(size_t{1} << 50) == "1.00 PiB");
    CHECK(human_bytes(SIZE_MAX) == "16.0 EiB");
}
