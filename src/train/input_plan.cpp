#include "train/input_plan.hpp"

#include <numeric>

#include "backend/backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"

namespace gputrain::train {

ops::AugmentPlan augment_plan(const std::vector<config::AugmentConfig>& steps, const Shape& shape, uint64_t seed) {
    ops::AugmentPlan p;
    p.seed = seed;
    if (shape.size() == 2 || shape.size() == 3) {
        p.height = static_cast<int32_t>(shape[0]);
        p.width = static_cast<int32_t>(shape[1]);
        p.channels = shape.size() == 3 ? static_cast<int32_t>(shape[2]) : 1;
    } else {
        p.width = static_cast<int32_t>(shape_elements(shape));
    }
    for (const config::AugmentConfig& a : steps) {
        if (p.steps == ops::kMaxAugmentSteps) throw Error("internal: more data.augment steps than the op holds");
        ops::AugmentStep& s = p.step[p.steps++];
        switch (a.type) {
            case config::AugmentType::random_crop:
                s = {ops::AugmentKind::random_crop, static_cast<int32_t>(a.padding), a.mode == config::FillMode::reflect,
                     0, 0.0f};
                break;
            case config::AugmentType::random_flip:
                s = {ops::AugmentKind::random_flip, a.flip != config::FlipMode::vertical,
                     a.flip != config::FlipMode::horizontal, 0, 0.0f};
                break;
            case config::AugmentType::random_translate:
                // Keras' RandomTranslation: the most shift is the factor of the side; here whole pixels.
                s = {ops::AugmentKind::random_translate, static_cast<int32_t>(a.height_factor * p.height),
                     static_cast<int32_t>(a.width_factor * p.width), a.mode == config::FillMode::reflect, 0.0f};
                break;
            case config::AugmentType::cutout:
                s = {ops::AugmentKind::cutout, static_cast<int32_t>(a.size), static_cast<int32_t>(a.count), 0, 0.0f};
                break;
            case config::AugmentType::random_rotation:
                s = {ops::AugmentKind::random_rotation, 0, 0, 0, static_cast<float>(a.degrees)};
                break;
        }
    }
    return p;
}

std::vector<float> augmented_samples(const config::RunConfig& cfg, const data::Dataset& d, int64_t first,
                                     int64_t count, int64_t epoch) {
    const int64_t n = d.sample_elements();
    // Token windows are not augmented: the ids as floats (their rows as stored hold one id more).
    if (d.type == data::SampleType::token) return data::model_inputs(d, first, first + std::max<int64_t>(0, count));
    std::vector<float> out(static_cast<size_t>(count * n));
    if (count <= 0) return out;
    std::vector<int32_t> ids(static_cast<size_t>(count));
    std::iota(ids.begin(), ids.end(), static_cast<int32_t>(first));
    const int64_t params[2] = {0, epoch};
    CpuBackend cpu;
    std::vector<char> rows(static_cast<size_t>(count) * d.row_bytes());
    d.read_rows(first, count, rows.data());
    ops::PrepareInputs op{};
    op.source = rows.data();
    op.source_u8 = d.type == data::SampleType::u8;
    op.sample_elements = static_cast<size_t>(n);
    op.params = params;
    op.ids = ids.data();
    const std::vector<float> zeros(static_cast<size_t>(data::channels_of(d.sample_shape)), 0.0f);
    op.table = d.table.empty() ? zeros.data() : d.table.data();
    op.plan = augment_plan(cfg.data.augment, d.sample_shape, cfg.training.seed);
    op.augment = !cfg.data.augment.empty();
    op.rows = static_cast<int>(count);
    op.out = out.data();
    run_op(cpu, op);
    return out;
}

}  // namespace gputrain::train
