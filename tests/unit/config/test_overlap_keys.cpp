// strategy.bucket_mb, stall_warning_seconds, data.resident, training.cuda_graphs, fused_kernels, cast_gemm_inputs,
// gemm_epilogues and deterministic: read, checked, written back to the resolved YAML, and (changing only speed) kept out of the digest.
#include <catch2/catch.hpp>

#include "config/resolved_yaml.hpp"
#include "load_helpers.hpp"

using namespace gputrain::config;
using namespace gputrain::config::testing;

TEST_CASE("strategy.bucket_mb and data.resident have defaults and take valid values") {
    const RunConfig defaults = load_text(kMinimal);
    CHECK(defaults.strategy.bucket_mb == 4.0);
    CHECK(defaults.data.resident == ResidentMode::automatic);
    const RunConfig set = load_text(kModel + "data: {dataset: fashion-mnist, resident: false}\nstrategy: {bucket_mb: 0.5}\n");
    CHECK(set.strategy.bucket_mb == 0.5);
    CHECK(set.data.resident == ResidentMode::off);
    CHECK(load_text(kMinimal, {"strategy.bucket_mb=25", "data.resident=true"}).strategy.bucket_mb == 25.0);
    CHECK(load_text(kMinimal, {"data.resident=true"}).data.resident == ResidentMode::on);
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
    CHECK(b.data.resident == ResidentMode::off);
    CHECK(a.resolved_yaml.find("bucket_mb: 0.25") != std::string::npos);
    CHECK(a.resolved_yaml.find("resident: false") != std::string::npos);
    const RunConfig defaults = load_text(kMinimal);
    CHECK(a.digest == defaults.digest);
    CHECK(load_text(kMinimal, {"training.batch_size=64"}).digest != defaults.digest);
}

TEST_CASE("training.cuda_graphs, fused_kernels, deterministic, cast_gemm_inputs (default true) and gemm_epilogues "
          "(default false) take a boolean, stay out of the digest") {
    struct Key {
        std::string name;
        bool TrainingConfig::*field;
        bool default_value;
    };
    const Key key = GENERATE(Key{"cuda_graphs", &TrainingConfig::cuda_graphs, true},
                             Key{"fused_kernels", &TrainingConfig::fused_kernels, true},
                             Key{"cast_gemm_inputs", &TrainingConfig::cast_gemm_inputs, true},
                             Key{"gemm_epilogues", &TrainingConfig::gemm_epilogues, false},
                             Key{"deterministic", &TrainingConfig::deterministic, true});
    INFO("training." << key.name);
    const RunConfig defaults = load_text(kMinimal);
    CHECK(defaults.training.*key.field == key.default_value);
    const std::string other = key.default_value ? "false" : "true";
    const RunConfig changed = load_text(kMinimal, {"training." + key.name + "=" + other});
    CHECK(changed.training.*key.field != key.default_value);
    CHECK(changed.resolved_yaml.find(key.name + ": " + other) != std::string::npos);
    CHECK(load_text(changed.resolved_yaml).training.*key.field != key.default_value);
    CHECK(changed.digest == defaults.digest);
    const std::string set = "training." + key.name + "=sometimes";
    REQUIRE(error_of(kMinimal, {set}) ==
            "--set " + set + ": training." + key.name + ": expected true or false, got 'sometimes'");
}

TEST_CASE("strategy.stall_warning_seconds: 60 by default, 0 turns it off, negative is an error; out of the digest") {
    CHECK(load_text(kMinimal).strategy.stall_warning_seconds == 60.0);
    const RunConfig a = load_text(kMinimal, {"strategy.stall_warning_seconds=1.5"});
    CHECK(a.strategy.stall_warning_seconds == 1.5);
    CHECK(load_text(kMinimal, {"strategy.stall_warning_seconds=0"}).strategy.stall_warning_seconds == 0.0);
    CHECK(load_text(a.resolved_yaml).strategy.stall_warning_seconds == 1.5);
    CHECK(a.digest == load_text(kMinimal).digest);
    REQUIRE(error_of(kMinimal + "strategy: {stall_warning_seconds: -1}\n") ==
            "cfg.yaml:3:35: strategy.stall_warning_seconds: expected a number >= 0, got '-1'");
}
