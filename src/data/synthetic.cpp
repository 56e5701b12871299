#include "data/synthetic.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "core/rng.hpp"

namespace gputrain::data {
namespace {

// Means in [64, 192] and noise in [-64, 64]: classes overlap per element but are
// far apart over a whole sample, so a small model learns them in an epoch or two.
constexpr float kMeanLow = 64.0f;
constexpr float kMeanSpread = 128.0f;
constexpr float kNoise = 64.0f;

}  // namespace

Dataset make_synthetic(const Shape& sample_shape, int64_t samples, int64_t classes, uint64_t seed,
                       SyntheticSplit split) {
    if (sample_shape.empty() || shape_elements(sample_shape) < 1) {
        throw ConfigError("data: synthetic data takes its sample shape from model.input_shape, which is " +
                          std::string(sample_shape.empty() ? "not set" : "empty"));
    }
    if (classes < 1) throw ConfigError("data.synthetic.classes must be at least 1, got " + std::to_string(classes));
    if (samples < 1) throw ConfigError("data.synthetic.samples must be at least 1, got " + std::to_string(samples));

    // Both tables are held in memory: a size that cannot be is a config error, not a failed allocation.
    constexpr int64_t kMaxFloats = int64_t{1} << 34;  // 64 GiB
    int64_t elements = 0, table = 0;
    if (!elements_within(sample_shape, kMaxSampleElements, elements) ||
        !elements_within({classes, elements}, kMaxFloats, table))
        throw ConfigError("data.synthetic.classes: " + std::to_string(classes) + " class means of " +
                          shape_to_string(sample_shape, false) + " are more than " + std::to_string(kMaxFloats) +
                          " values; use fewer classes");
    if (!elements_within({samples, elements}, kMaxFloats, table))
        throw ConfigError("data.synthetic.samples: " + std::to_string(samples) + " samples of " +
                          shape_to_string(sample_shape, false) + " are more than " + std::to_string(kMaxFloats) +
                          " values; use fewer samples");
    require_host_memory(static_cast<size_t>(classes * elements) * sizeof(float) + static_cast<size_t>(samples * elements) +
                            static_cast<size_t>(samples) * sizeof(int32_t),
                        std::string("data.synthetic: ") + std::to_string(samples) + " " +
                            (split == SyntheticSplit::train ? "training" : "test") + " samples of " +
                            shape_to_string(sample_shape, false) + " and their class means",
                        "use fewer data.synthetic.samples or a smaller model.input_shape");
    const Rng base(seed);
    Rng pattern_rng = base.split(0);
    std::vector<float> means(static_cast<size_t>(classes * elements));
    for (float& m : means) m = kMeanLow + kMeanSpread * pattern_rng.uniform();

    Rng rng = base.split(split == SyntheticSplit::train ? 1 : 2);
    Dataset d;
    d.sample_shape = sample_shape;
    d.num_classes = classes;
    d.labels.resize(static_cast<size_t>(samples));
    d.type = SampleType::u8;
    d.pixels.resize(static_cast<size_t>(samples * elements));
    for (int64_t i = 0; i < samples; ++i) {
        const int64_t label = static_cast<int64_t>(rng.below(static_cast<uint64_t>(classes)));
        d.labels[static_cast<size_t>(i)] = static_cast<int32_t>(label);
        const float* mean = means.data() + label * elements;
        uint8_t* out = d.pixels.data() + i * elements;
        for (int64_t e = 0; e < elements; ++e) {
            const float v = std::round(mean[e] + kNoise * (2.0f * rng.uniform() - 1.0f));
            out[e] = static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
        }
    }
    d.description = std::string("synthetic ") + (split == SyntheticSplit::train ? "train" : "test") + " (" +
                    std::to_string(samples) + " samples, " + std::to_string(classes) + " classes, seed " +
                    std::to_string(seed) + ")";
    return d;
}

}  // namespace gputrain::data
