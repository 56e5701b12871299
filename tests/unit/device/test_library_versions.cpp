#include <catch2/catch.hpp>

#include "device/library_versions.hpp"

using namespace gputrain::device;

TEST_CASE("format_library_version reads both of cuDNN's and NCCL's encodings") {
    CHECK(format_library_version(90100) == "9.1.0");     // cuDNN 9: major*10000
    CHECK(format_library_version(91900) == "9.19.0");
    CHECK(format_library_version(8907) == "8.9.7");      // cuDNN 8: major*1000
    CHECK(format_library_version(22105) == "2.21.5");    // NCCL >= 2.9
    CHECK(format_library_version(2708) == "2.7.8");      // NCCL < 2.9
}

TEST_CASE("format_cuda_version reads cuDriverGetVersion's encoding") {
    CHECK(format_cuda_version(12040) == "12.4");
    CHECK(format_cuda_version(13000) == "13.0");
    CHECK(format_cuda_version(11080) == "11.8");
}

TEST_CASE("a missing library reads as not found") {
    CHECK_FALSE(read_cudnn_version("libgputrain-no-such-cudnn.so.9").has_value());
    CHECK_FALSE(read_nccl_version("libgputrain-no-such-nccl.so.2").has_value());
    // A library without the function is not the library.
    CHECK_FALSE(read_cudnn_version("libc.so.6").has_value());
    CHECK_FALSE(read_nccl_version("libc.so.6").has_value());
}

TEST_CASE("parse_nvrm_version finds the version in /proc/driver/nvidia/version") {
    CHECK(parse_nvrm_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC "
                             "2023\nGCC version:  gcc version 12.2.0\n") == "535.104.05");
    CHECK(parse_nvrm_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  "
                             "(dvs-builder@U16-I3-B03-4-3)  Thu Jan 23 23:08:54 UTC 2025\n") == "570.86.15");
    CHECK(parse_nvrm_version("GCC version: 12\n").empty());
    CHECK(parse_nvrm_version("NVRM version: NVIDIA UNIX Kernel Module\nGCC version:  gcc version 12.2.0\n").empty());
    CHECK(read_nvrm_version("/nonexistent/gputrain/nvidia/version").empty());
}
