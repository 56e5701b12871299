// config::gemm_epilogues_unused_reason: when training.gemm_epilogues cannot act.
#include <catch2/catch.hpp>

#include "config/gemm_epilogues_use.hpp"

using namespace gputrain::config;

TEST_CASE("gemm_epilogues: unused under bf16/fp16 with cast_gemm_inputs, with a line saying what to set") {
    RunConfig cfg;
    cfg.training.gemm_epilogues = true;
    cfg.training.cast_gemm_inputs = true;
    cfg.training.precision = Precision::bf16;
    REQUIRE(gemm_epilogues_unused_reason(cfg) ==
            "GEMM epilogues: not used: under training.precision bf16 with training.cast_gemm_inputs: true (the "
            "default) each GEMM multiplies 16-bit copies of its inputs, which take the plain path; set "
            "training.cast_gemm_inputs: false to use the epilogues");
    cfg.training.precision = Precision::fp16;
    REQUIRE(gemm_epilogues_unused_reason(cfg).find("training.precision fp16") != std::string::npos);
}

TEST_CASE("gemm_epilogues: no reason when they can act or are off") {
    RunConfig cfg;
    cfg.training.gemm_epilogues = true;
    for (const Precision precision : {Precision::fp32, Precision::tf32}) {
        cfg.training.precision = precision;
        cfg.training.cast_gemm_inputs = true;  // no effect under these
        REQUIRE(gemm_epilogues_unused_reason(cfg).empty());
    }
    cfg.training.precision = Precision::bf16;
    cfg.training.cast_gemm_inputs = false;
    REQUIRE(gemm_epilogues_unused_reason(cfg).empty());
    cfg.training.cast_gemm_inputs = true;
    cfg.training.gemm_epilogues = false;
    REQUIRE(gemm_epilogues_unused_reason(cfg).empty());
}
