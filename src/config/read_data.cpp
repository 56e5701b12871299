// data: where the samples come from and how much of them to use. Which of
// dataset/path/format go together is checked in validate.cpp.
#include "config/read_sections.hpp"

#include <cmath>

namespace gputrain::config {

DataConfig read_data(const Section& top) {
    const Section s = top.child("data");
    DataConfig out;
    out.dataset = s.text("dataset", out.dataset);
    out.path = s.text("path", out.path);
    out.format = s.choice("format", out.format);
    out.scale = s.number("scale", out.scale, NumberRange::positive);
    // IDX images and synthetic data are bytes (0 to 255): their largest value, scaled, must stay a float32.
    if ((out.format != DataFormat::csv || out.dataset == "synthetic") && !std::isfinite(static_cast<float>(255.0 * out.scale)))
        s.value("scale").fail("takes pixel values (0 to 255) past float32's range (3.4e38)",
                              "give at most 1.3e36, e.g. scale: 0.00392156862745098 (1/255)");
    out.validation_split = s.number("validation_split", out.validation_split, NumberRange::fraction);
    out.limit = s.count("limit", out.limit);
    out.test_limit = s.count("test_limit", out.test_limit);
    out.shard_files = s.boolean("shard_files", out.shard_files);
    out.resident = s.choice("resident", out.resident);
    const Section synthetic = s.child("synthetic");
    out.synthetic_samples = synthetic.positive_int("samples", out.synthetic_samples);
    out.synthetic_classes = synthetic.positive_int("classes", out.synthetic_classes);
    out.synthetic_seed = synthetic.seed("seed", out.synthetic_seed);
    return out;
}

}  // namespace gputrain::config
