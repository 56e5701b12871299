// ops::PrepareInputs on the CPU: rows gathered by the epoch's order with their
// labels, bytes through the per-channel table, and augmentation as a function
// of (seed, epoch, sample index) alone. Pixel-for-pixel checks of each
// augmentation against NumPy are in tests/cli/test_augment.sh.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/ops/prepare_inputs.hpp"

using namespace gputrain;

namespace {

constexpr int kH = 4, kW = 5, kC = 2, kPer = kH * kW * kC;

struct Source {
    std::vector<uint8_t> bytes;
    std::vector<float> table;
    std::vector<int32_t> labels;
    Source() {
        for (int i = 0; i < 6 * kPer; ++i) bytes.push_back(static_cast<uint8_t>((i * 7 + 3) % 256));
        for (int c = 0; c < kC; ++c)
            for (int v = 0; v < 256; ++v) table.push_back(static_cast<float>(v) * (c == 0 ? 1.0f : -0.5f) + 1000.0f * c);
        for (int i = 0; i < 6; ++i) labels.push_back(10 + i);
    }
};

ops::PrepareInputs op_for(const Source& s, float* out, int rows, const int64_t* params) {
    ops::PrepareInputs op{};
    op.source = s.bytes.data();
    op.source_u8 = true;
    op.sample_elements = kPer;
    op.params = params;
    op.table = s.table.data();
    op.plan.height = kH, op.plan.width = kW, op.plan.channels = kC, op.plan.seed = 9;
    op.rows = rows;
    op.out = out;
    return op;
}

}  // namespace

TEST_CASE("prepare_inputs gathers rows by the order from the position in memory, with their labels, through the table") {
    CpuBackend cpu;
    const Source s;
    const std::vector<int32_t> order{5, 0, 3, 3, 1};
    const int64_t params[2] = {1, 0};  // rows are order[1..]
    std::vector<float> out(3 * kPer);
    std::vector<int32_t> labels(3, -1);
    ops::PrepareInputs op = op_for(s, out.data(), 3, params);
    op.order = order.data();
    op.source_labels = s.labels.data();
    op.labels = labels.data();
    run_op(cpu, op);
    REQUIRE(labels == std::vector<int32_t>{10, 13, 13});
    for (int r = 0; r < 3; ++r)
        for (int i = 0; i < kPer; ++i) {
            const int sample = order[static_cast<size_t>(1 + r)];
            const int c = i % kC;
            REQUIRE(out[static_cast<size_t>(r * kPer + i)] == s.table[static_cast<size_t>(c * 256 + s.bytes[sample * kPer + i])]);
        }
}

TEST_CASE("prepare_inputs augments each sample by its (seed, epoch, index) alone") {
    CpuBackend cpu;
    const Source s;
    const auto augmented = [&](std::vector<int32_t> ids, int64_t epoch, int first_row) {
        const int64_t params[2] = {0, epoch};
        std::vector<float> out(ids.size() * kPer);
        ops::PrepareInputs op = op_for(s, out.data(), static_cast<int>(ids.size()), params);
        op.source = s.bytes.data() + first_row * kPer;
        op.ids = ids.data();
        op.augment = true;
        op.plan.step[op.plan.steps++] = {ops::AugmentKind::random_crop, 1, 0, 0, 0.0f};
        op.plan.step[op.plan.steps++] = {ops::AugmentKind::random_flip, 1, 1, 0, 0.0f};
        run_op(cpu, op);
        return out;
    };
    // Sample 3 alone, or in a shard of rows 2..4: the same pixels (its place in the batch does not matter).
    const auto alone = augmented({3}, 4, 3);
    const auto in_shard = augmented({2, 3, 4}, 4, 2);
    REQUIRE(std::vector<float>(in_shard.begin() + kPer, in_shard.begin() + 2 * kPer) == alone);
    // Another epoch draws again: over 6 samples, some differ.
    REQUIRE(augmented({0, 1, 2, 3, 4, 5}, 4, 0) != augmented({0, 1, 2, 3, 4, 5}, 5, 0));
    // Each output is a shifted, flipped copy of its source: every value is the
    // table's value of some byte of the same channel, or the padding's (byte 0).
    const auto all = augmented({0, 1, 2, 3, 4, 5}, 4, 0);
    for (size_t i = 0; i < all.size(); ++i) {
        const int c = static_cast<int>(i % kC);
        bool found = all[i] == s.table[static_cast<size_t>(c * 256)];
        const size_t sample = i / kPer;
        for (int j = c; j < kPer && !found; j += kC)
            found = all[i] == s.table[static_cast<size_t>(c * 256 + s.bytes[sample * kPer + static_cast<size_t>(j)])];
        REQUIRE(found);
    }
}

TEST_CASE("prepare_inputs makes token windows: ids as floats, the next ids as labels, from a text's ids or copied rows") {
    const int positions = 5, rows = 3;
    std::vector<uint32_t> text32(41);
    for (size_t i = 0; i < text32.size(); ++i) text32[i] = static_cast<uint32_t>((i * 7919 + 13) % 70000);
    std::vector<uint16_t> text16(text32.size());
    for (size_t i = 0; i < text32.size(); ++i) text16[i] = static_cast<uint16_t>(text32[i] % 65536);
    const std::vector<int32_t> order = {0, 6, 2, 7, 1, 3, 5, 4};  // windows 0..7 of the 41 ids
    const int64_t params[2] = {3, 0};                          // this shard: order[3..5] = windows 7, 1, 3
    CpuBackend cpu;
    for (const int bytes : {2, 4}) {
        INFO(bytes << " bytes an id");
        const auto id = [&](size_t i) -> uint32_t { return bytes == 2 ? text16[i] : text32[i]; };
        // Resident: the text's ids, windows every `positions` ids.
        std::vector<float> out(rows * positions, -1.0f);
        std::vector<int32_t> labels(rows * positions, -1);
        ops::PrepareInputs op{};
        op.source = bytes == 2 ? static_cast<const void*>(text16.data()) : static_cast<const void*>(text32.data());
        op.sample_elements = positions;
        op.token_bytes = bytes;
        op.token_stride = positions;
        op.order = order.data();
        op.params = params;
        op.labels = labels.data();
        op.label_width = positions;
        op.rows = rows;
        op.out = out.data();
        run_op(cpu, op);
        for (int r = 0; r < rows; ++r)
            for (int t = 0; t < positions; ++t) {
                const size_t at = static_cast<size_t>(order[static_cast<size_t>(params[0] + r)] * positions + t);
                REQUIRE(out[static_cast<size_t>(r * positions + t)] == static_cast<float>(id(at)));
                REQUIRE(labels[static_cast<size_t>(r * positions + t)] == static_cast<int32_t>(id(at + 1)));
            }
        // Copied rows (the loader's): positions + 1 ids each, in batch order.
        std::vector<uint32_t> copied32;
        std::vector<uint16_t> copied16;
        for (int r = 0; r < rows; ++r)
            for (int t = 0; t <= positions; ++t) {
                const size_t at = static_cast<size_t>(order[static_cast<size_t>(params[0] + r)] * positions + t);
                copied32.push_back(text32[at]);
                copied16.push_back(text16[at]);
            }
        std::vector<float> out2(out.size(), -1.0f);
        std::vector<int32_t> labels2(labels.size(), -1);
        op.source = bytes == 2 ? static_cast<const void*>(copied16.data()) : static_cast<const void*>(copied32.data());
        op.token_stride = positions + 1;
        op.order = nullptr;
        op.labels = labels2.data();
        op.out = out2.data();
        run_op(cpu, op);
        REQUIRE(out2 == out);
        REQUIRE(labels2 == labels);
    }
}
