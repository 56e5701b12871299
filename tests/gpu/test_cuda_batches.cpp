// The CUDA backend's input-batch support against the CPU backend: pinned
// memory, copies on the copy stream ordered by wait_copies, gather_rows.
#include "parity.hpp"

using namespace gpu_test;

TEST_CASE("gather_rows on the GPU picks the same rows as on the CPU, for floats and labels") {
    const int rows = GENERATE(1, 7, 300);
    const size_t row_words = GENERATE(as<size_t>{}, 1, 33, 784);
    const int table_rows = 517;
    const auto table = random_vector(static_cast<size_t>(table_rows) * row_words, 3);
    std::vector<int32_t> indices(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) indices[static_cast<size_t>(r)] = (r * 131 + 7) % table_rows;  // repeats allowed
    CpuBackend cpu;
    CudaBackend gpu(0);
    auto gather = [&](Backend& b) {
        Buffers buf(b);
        float* out = buf.zeros<float>(static_cast<size_t>(rows) * row_words);
        b.gather_rows(out, buf.upload(table), buf.upload(indices), rows, row_words);
        return buf.download(out, static_cast<size_t>(rows) * row_words);
    };
    const auto expected = gather(cpu);
    for (int r = 0; r < rows; ++r)  // the CPU itself against the table
        REQUIRE(expected[static_cast<size_t>(r) * row_words] ==
                table[static_cast<size_t>(indices[static_cast<size_t>(r)]) * row_words]);
    require_identical(gather(gpu), expected);
}

TEST_CASE("Asynchronous copies from pinned memory reach the device before compute that waits for them") {
    CudaBackend gpu(0);
    Buffers buf(gpu);
    const size_t n = 1 << 20;
    float* dst[2] = {buf.zeros<float>(n), buf.zeros<float>(n)};
    float* pinned[2] = {static_cast<float*>(gpu.allocate_host_pinned(n * sizeof(float))),
                        static_cast<float*>(gpu.allocate_host_pinned(n * sizeof(float)))};
    uint64_t tickets[2] = {0, 0};
    // Ten steps of the replica's pattern: stage into one buffer while "compute"
    // (a scale) runs on the other, then switch.
    for (int step = 0; step < 10; ++step) {
        const int slot = step % 2;
        gpu.wait_copy_on_host(tickets[slot]);
        for (size_t i = 0; i < n; ++i) pinned[slot][i] = static_cast<float>(step) + static_cast<float>(i % 7);
        tickets[slot] = gpu.copy_to_device_async(dst[slot], pinned[slot], n * sizeof(float));
        REQUIRE(tickets[slot] > 0);
        gpu.wait_copies();
        gpu.scale(dst[slot], n, 2.0f);
        const auto out = buf.download(dst[slot], n);
        for (size_t i : {size_t{0}, size_t{1}, n / 2, n - 1})
            REQUIRE(out[i] == 2.0f * (static_cast<float>(step) + static_cast<float>(i % 7)));
    }
    gpu.release_host_pinned(pinned[0]);
    gpu.release_host_pinned(pinned[1]);
    REQUIRE(gpu.has_device_memory());
    REQUIRE(gpu.free_device_bytes() > 0);
}
