// The CUDA backend's input-batch support against the CPU backend: pinned
// memory, copies on the copy stream ordered by wait_copies, prepare_inputs.
#include "backend/ops/prepare_inputs.hpp"
#include "parity.hpp"

using namespace gpu_test;

TEST_CASE("prepare_inputs on the GPU gives the CPU's rows: gathered by the order, bytes through the table, augmented") {
    const int height = 6, width = 5, channels = 3, rows = 37;
    const size_t per = static_cast<size_t>(height * width * channels);
    const int samples = 517;
    std::vector<uint8_t> bytes(static_cast<size_t>(samples) * per);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
    const auto floats = random_vector(static_cast<size_t>(samples) * per, 3);
    std::vector<float> table(static_cast<size_t>(channels) * 256);
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i % 256) / 255.0f - 0.1f * static_cast<float>(i / 256);
    std::vector<int32_t> labels(static_cast<size_t>(samples));
    for (int r = 0; r < samples; ++r) labels[static_cast<size_t>(r)] = r * 3 + 1;
    // An epoch's order with repeats; the batch starts at `position` in it.
    const int64_t params[2] = {45, 7};
    std::vector<int32_t> order(static_cast<size_t>(params[0] + rows + 10));
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>((i * 131 + 7) % samples);
    gputrain::ops::AugmentPlan plan;
    plan.height = height, plan.width = width, plan.channels = channels, plan.seed = 42;
    plan.step[plan.steps++] = {gputrain::ops::AugmentKind::random_crop, 2, 1, 0, 0.0f};
    plan.step[plan.steps++] = {gputrain::ops::AugmentKind::random_flip, 1, 1, 0, 0.0f};
    plan.step[plan.steps++] = {gputrain::ops::AugmentKind::cutout, 2, 2, 0, 0.0f};
    CpuBackend cpu;
    CudaBackend gpu(0);
    auto prepare = [&](Backend& b, bool u8, bool augment, bool rotate) {
        Buffers buf(b);
        float* x = buf.zeros<float>(static_cast<size_t>(rows) * per);
        int32_t* y = buf.zeros<int32_t>(static_cast<size_t>(rows));
        gputrain::ops::PrepareInputs op{};
        op.source = u8 ? static_cast<const void*>(buf.upload(bytes)) : static_cast<const void*>(buf.upload(floats));
        op.source_u8 = u8;
        op.sample_elements = per;
        op.order = buf.upload(order);
        op.params = buf.upload(std::vector<int64_t>{params[0], params[1]});
        op.source_labels = buf.upload(labels);
        op.labels = y;
        op.table = buf.upload(table);
        op.augment = augment;
        op.plan = plan;
        if (rotate) op.plan.step[op.plan.steps++] = {gputrain::ops::AugmentKind::random_rotation, 0, 0, 0, 20.0f};
        op.rows = rows;
        op.out = x;
        gputrain::run_op(b, op);
        return std::make_pair(buf.download(x, static_cast<size_t>(rows) * per), buf.download(y, static_cast<size_t>(rows)));
    };
    for (const bool u8 : {false, true}) {
        const auto expected = prepare(cpu, u8, false, false);
        for (int r = 0; r < rows; ++r) {  // the CPU itself against the source
            const size_t row = static_cast<size_t>(order[static_cast<size_t>(params[0] + r)]);
            const size_t last = row * per + per - 1;
            REQUIRE(expected.first[static_cast<size_t>(r) * per + per - 1] ==
                    (u8 ? table[2 * 256 + bytes[last]] : floats[last]));
            REQUIRE(expected.second[static_cast<size_t>(r)] == labels[row]);
        }
        const auto got = prepare(gpu, u8, false, false);
        require_identical(got.first, expected.first);
        REQUIRE(got.second == expected.second);
        // Integer augmentations are exact; rotation interpolates in float on each (within rounding).
        require_identical(prepare(gpu, u8, true, false).first, prepare(cpu, u8, true, false).first);
        const auto rotated_gpu = prepare(gpu, u8, true, true).first, rotated_cpu = prepare(cpu, u8, true, true).first;
        for (size_t i = 0; i < rotated_cpu.size(); ++i) REQUIRE(std::abs(rotated_gpu[i] - rotated_cpu[i]) <= 1e-5f);
    }
}

TEST_CASE("prepare_inputs on the GPU makes the CPU's token windows: uint16 and uint32 ids, resident or copied") {
    const int positions = 33, rows = 29, windows = 301;
    std::vector<uint32_t> text32(static_cast<size_t>(windows * positions + 1));
    for (size_t i = 0; i < text32.size(); ++i) text32[i] = static_cast<uint32_t>((i * 7919 + 13) % 100000);
    std::vector<uint16_t> text16(text32.size());
    for (size_t i = 0; i < text32.size(); ++i) text16[i] = static_cast<uint16_t>(text32[i] % 65536);
    const int64_t params[2] = {17, 0};
    std::vector<int32_t> order(static_cast<size_t>(params[0] + rows));
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>((i * 131 + 7) % windows);
    CpuBackend cpu;
    CudaBackend gpu(0);
    auto prepare = [&](Backend& b, int bytes, bool resident) {
        Buffers buf(b);
        float* x = buf.zeros<float>(static_cast<size_t>(rows * positions));
        int32_t* y = buf.zeros<int32_t>(static_cast<size_t>(rows * positions));
        std::vector<uint32_t> rows32;  // the loader's rows: positions + 1 ids each
        std::vector<uint16_t> rows16;
        for (int r = 0; r < rows; ++r)
            for (int t = 0; t <= positions; ++t) {
                const size_t at = static_cast<size_t>(order[static_cast<size_t>(params[0] + r)]) * positions + t;
                rows32.push_back(text32[at]);
                rows16.push_back(text16[at]);
            }
        gputrain::ops::PrepareInputs op{};
        if (resident)
            op.source = bytes == 2 ? static_cast<const void*>(buf.upload(text16)) : static_cast<const void*>(buf.upload(text32));
        else
            op.source = bytes == 2 ? static_cast<const void*>(buf.upload(rows16)) : static_cast<const void*>(buf.upload(rows32));
        op.sample_elements = positions;
        op.token_bytes = bytes;
        op.token_stride = static_cast<size_t>(resident ? positions : positions + 1);
        op.order = resident ? buf.upload(order) : nullptr;
        op.params = buf.upload(std::vector<int64_t>{params[0], params[1]});
        op.labels = y;
        op.label_width = positions;
        op.rows = rows;
        op.out = x;
        gputrain::run_op(b, op);
        return std::make_pair(buf.download(x, static_cast<size_t>(rows * positions)),
                              buf.download(y, static_cast<size_t>(rows * positions)));
    };
    for (const int bytes : {2, 4})
        for (const bool resident : {true, false}) {
            INFO(bytes << " bytes an id, " << (resident ? "resident" : "copied rows"));
            const auto expected = prepare(cpu, bytes, resident);
            const size_t at = static_cast<size_t>(order[static_cast<size_t>(params[0] + rows - 1)]) * positions + positions;
            REQUIRE(expected.second.back() == static_cast<int32_t>(bytes == 2 ? text16[at] : text32[at]));
            const auto got = prepare(gpu, bytes, resident);
            REQUIRE(got.first == expected.first);
            REQUIRE(got.second == expected.second);
        }
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
