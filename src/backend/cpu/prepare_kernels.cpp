// The CPU's kernel of backend/ops/prepare_inputs.hpp.
#include <cstring>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/ops/prepare_inputs.hpp"

namespace gputrain::cpu_kernels {

namespace {

void prepare_inputs(Backend&, const ops::PrepareInputs& op) {
    const ops::AugmentPlan& p = op.plan;
    const size_t n = op.sample_elements;
    const int channels = p.channels;
    const int64_t position = op.order ? op.params[0] : 0;
    for (int r = 0; r < op.rows; ++r) {
        const int64_t sample = op.order ? op.order[position + r] : r;
        float* out = op.out + static_cast<size_t>(r) * n;
        if (op.token_bytes) {  // a window: ids as floats, the next ids its labels
            const size_t first = static_cast<size_t>(sample) * op.token_stride;
            int32_t* labels = op.labels + static_cast<size_t>(r) * n;
            const auto copy = [&](const auto* ids) {
                for (size_t t = 0; t < n; ++t) {
                    out[t] = static_cast<float>(ids[first + t]);
                    labels[t] = static_cast<int32_t>(ids[first + t + 1]);
                }
            };
            if (op.token_bytes == 2) copy(static_cast<const uint16_t*>(op.source));
            else copy(static_cast<const uint32_t*>(op.source));
            continue;
        }
        if (op.order && op.labels)
            std::memcpy(op.labels + static_cast<size_t>(r) * op.label_width,
                        op.source_labels + static_cast<size_t>(sample) * op.label_width,
                        static_cast<size_t>(op.label_width) * sizeof(int32_t));
        const uint8_t* bytes = op.source_u8 ? static_cast<const uint8_t*>(op.source) + static_cast<size_t>(sample) * n
                                            : nullptr;
        const float* floats =
            op.source_u8 ? nullptr : static_cast<const float*>(op.source) + static_cast<size_t>(sample) * n;
        if (!op.augment) {
            if (floats) {
                std::memcpy(out, floats, n * sizeof(float));
            } else if (channels == 1) {
                for (size_t i = 0; i < n; ++i) out[i] = op.table[bytes[i]];
            } else {
                for (size_t i = 0; i < n; i += static_cast<size_t>(channels))
                    for (int c = 0; c < channels; ++c) out[i + c] = op.table[c * 256 + bytes[i + c]];
            }
            continue;
        }
        const int64_t id = op.order ? sample : op.ids[r];
        const uint64_t key = ops::augment_key(p.seed, op.params[1], id);
        uint64_t table[ops::kMaxAugmentSteps * ops::kDrawsPerStep];
        for (int k = 0; k < p.steps; ++k)
            for (int j = 0; j < ops::kDrawsPerStep; ++j) table[k * ops::kDrawsPerStep + j] = ops::augment_draw(key, k, j);
        const ops::TabledDraws draws{table};
        const auto fetch = [&](int y, int x, int c) {
            const size_t i = (static_cast<size_t>(y) * p.width + x) * channels + c;
            return bytes ? op.table[c * 256 + bytes[i]] : floats[i];
        };
        for (int y = 0; y < p.height; ++y)
            for (int x = 0; x < p.width; ++x)
                for (int c = 0; c < channels; ++c) {
                    const float fill = bytes ? op.table[c * 256] : op.table[c];
                    *out++ = ops::augmented_value(p, draws, y, x, c, fill, fetch);
                }
    }
}

}  // namespace

void add_prepare(KernelTable& table) { table.add<ops::PrepareInputs, &prepare_inputs>(); }

}  // namespace gputrain::cpu_kernels
