// The GPU tests' main: without a GPU (or driver) the whole program is skipped
// (exit 77, Meson's "skipped"), so the suite passes on CPU-only machines.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "backend/cuda/cuda_backend.hpp"

int main(int argc, char** argv) {
    if (gputrain::cuda_device_count() == 0) {
        std::puts("no GPU: skipping");
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
