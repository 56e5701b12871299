// strategy.bucket_mb, data.resident, training.cuda_graphs and training.fused_kernels: read, checked,
// written back to the resolved YAML, and (changing only speed) kept out of the digest.
#include <catch2/catch.hpp>

#include "config/resolved_yaml.hpp"
#include "load_helpers.hpp"

using namespace gputrain::config;
using namespace gputrain::config::testing;

TEST_CASE("strategy.bucket_mb and data.resident have defaults and take valid values") {
    const RunConfig defaults = load_text(kMinimal);
    CHECK(defaults.strategy.bucket_mb == 4.0);
    CHECK(defaults.data.resident == "auto");
    const RunConfig set = load_text(kModel + "data: {dataset: fashion-mnist, resident: false}\nstrategy: {bucket_mb: 0.5}\n");
    CHECK(set.strategy.bucket_mb == 0.5);
    CHECK(set.data.resident == "false");
    CHECK(load_text(kMinimal, {"strategy.bucket_mb=25", "data.resident=true"}).strategy.bucket_mb == 25.0);
    CHECK(load_text(kMinimal, {"data.resident=true"}).data.resident == "true");
}

TEST_CASE("A negative bucket_mb or an unknown resident mode is an error naming the key") {
    REQUIRE(error_of(kMinimal + "strategy: {bucket_mb: -1}\n") ==
            "cfg.yaml:3:23: strategy.bucket_mb: expected a number >= 0, got '-1'");
    REQUIRE(error_of(kModel + "data: {dataset: fashion-mnist, resident: maybe}\n") ==
            "cfg.yaml:2:42: data.resident: unknown resident mode 'maybe'; known resident modes: auto, true, false");
}

TEST_CASE("bucket_mb and resident round-trip through the resolved YAML but stay out of the digest") {
    const RunConfig a = load_text(kMinimal, {"strategy.bucket_mb=0.25", "data.resident=false"});
    const RunConfig b = load_text(a.resolved_yaml);
    CHECK(b.strategy.bucket_mb == 0.25);
    CHECK(b.data.resident == "false");
    CHECK(a.resolved_yaml.find("bucket_mb: 0.25") != std::string::npos);
    CHECK(a.resolved_yaml.find("resident: false") != std::string::npos);
    const RunConfig defaults = load_text(kMinimal);
    CHECK(a.digest == defaults.digest);
    CHECK(load_text(kMinimal, {"training.batch_size=64"}).digest != defaults.digest);
}

TEST_CASE("training.cuda_graphs defaults to true, takes a boolean, and stays out of the digest") {
    const RunConfig defaults = load_text(kMinimal);
    CHECK(defaults.training.cuda_graphs);
    const RunConfig off = load_text(kMinimal, {"training.cuda_graphs=false"});
    CHECK_FALSE(off.training.cuda_graphs);
    CHECK(off.resolved_yaml.find("cuda_graphs: false") != std::string::npos);
    CHECK_FALSE(load_text(off.resolved_yaml).training.cuda_graphs);
    CHECK(off.digest == defaults.digest);
    REQUIRE(error_of(kMinimal, {"training.cuda_graphs=sometimes"}) ==
            "--set training.cuda_graphs=sometimes: training.cuda_graphs: expected true or false, got 'sometimes'");
}

TEST_CASE("training.fused_kernels defaults to true, takes a boolean, and stays out of the digest") {
    const RunConfig defaults = load_text(kMinimal);
    CHECK(defaults.training.fused_kernels);
    const RunConfig off = load_text(kMinimal, {"training.fused_kernels=false"});
    CHECK_FALSE(off.training.fused_kernels);
    CHECK(off.resolved_yaml.find("fused_kernels: false") != std::string::npos);
    CHECK_FALSE(load_text(off.resolved_yaml).training.fused_kernels);
    CHECK(off.digest == defaults.digest);
    REQUIRE(error_of(kMinimal, {"training.fused_kernels=1.5"}) ==
            "--set training.fused_kernels=1.5: training.fused_kernels: expected true or false, got '1.5'");
}
