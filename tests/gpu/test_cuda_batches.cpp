// The CUDA backend's input-batch support against the CPU backend: pinned
// memory, copies on the copy stream ordered by wait_copies, gather_batch.
#include "parity.hpp"

using namespace gpu_test;

TEST_CASE("gather_batch on the GPU picks the same rows as on the CPU, inputs and labels, from the position in memory") {
    const int rows = GENERATE(1, 7, 300);
    const size_t row_words = GENERATE(as<size_t>{}, 1, 33, 784);
    const int table_rows = 517;
    const auto table = random_vector(static_cast<size_t>(table_rows) * row_words, 3);
    std::vector<int32_t> labels(static_cast<size_t>(table_rows));
    for (int r = 0; r < table_rows; ++r) labels[static_cast<size_t>(r)] = r * 3 + 1;
    // An epoch's order with repeats; the batch starts at `position` in it.
    const int64_t position = 45;
    std::vector<int32_t> order(static_cast<size_t>(position + rows + 10));
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>((i * 131 + 7) % table_rows);
    CpuBackend cpu;
    CudaBackend gpu(0);
    auto gather = [&](Backend& b) {
        Buffers buf(b);
        float* x = buf.zeros<float>(static_cast<size_t>(rows) * row_words);
        int32_t* y = buf.zeros<int32_t>(static_cast<size_t>(rows));
        int64_t* at = buf.upload(std::vector<int64_t>{0});
        b.upload(at, &position, sizeof position);
        b.gather_batch(x, y, buf.upload(table), buf.upload(labels), row_words, buf.upload(order), at, rows);
        return std::make_pair(buf.download(x, static_cast<size_t>(rows) * row_words),
                              buf.download(y, static_cast<size_t>(rows)));
    };
    const auto expected = gather(cpu);
    for (int r = 0; r < rows; ++r) {  // the CPU itself against the table
        const size_t row = static_cast<size_t>(order[static_cast<size_t>(position + r)]);
        REQUIRE(expected.first[static_cast<size_t>(r) * row_words + row_words - 1] == table[row * row_words + row_words - 1]);
        REQUIRE(expected.second[static_cast<size_t>(r)] == labels[row]);
    }
    const auto got = gather(gpu);
    require_identical(got.first, expected.first);
    REQUIRE(got.second == expected.second);
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
