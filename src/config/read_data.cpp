// data: where the samples come from and how much of them to use. Which of
// dataset/path/format go together is checked in validate.cpp.
#include "config/read_sections.hpp"
#include "config/scalar_text.hpp"

#include <cmath>

namespace gputrain::config {
namespace {

// As ops::AugmentPlan holds them (backend/ops/prepare_inputs.hpp).
constexpr int64_t kMaxAugmentSteps = 8;
constexpr int64_t kMaxCutouts = 8;

const char* const kAugmentExample =
    "e.g. augment: [{random_crop: {padding: 4}}, random_flip, {cutout: {size: 8}}]";

// A list of numbers, each within `range`.
std::vector<double> read_numbers(const Section& s, const std::string& key, NumberRange range) {
    const ValueRef v = s.value(key);
    if (!v.node.IsSequence()) {
        if (v.node.IsScalar()) return {read_number(v, range)};  // one value for every channel
        v.fail("expected a number or a list of numbers (one per channel), got " + describe(v.node));
    }
    if (v.node.size() == 0) v.fail("is empty", "give one value per channel, e.g. [0.2860] for Fashion-MNIST");
    std::vector<double> out;
    for (size_t i = 0; i < v.node.size(); ++i) out.push_back(read_number(list_item(v, i), range));
    return out;
}

// data.target_columns: a column (index or header name) or a list of them.
std::vector<std::string> read_target_columns(const Section& data) {
    if (!data.has("target_columns")) return {};
    const ValueRef v = data.value("target_columns");
    const char* example = "e.g. target_columns: [target] (header names) or [-1] (0-based indices; -1 the last)";
    if (v.node.IsNull()) return {};
    if (v.node.IsScalar()) return {read_text(v)};
    if (!v.node.IsSequence()) v.fail("expected a column or a list of columns, got " + describe(v.node), example);
    if (v.node.size() == 0) v.fail("is empty", example);
    std::vector<std::string> out;
    for (size_t i = 0; i < v.node.size(); ++i) {
        const ValueRef item = list_item(v, i);
        if (!item.node.IsScalar()) item.fail("expected a column index or name, got " + describe(item.node), example);
        const std::string column = read_text(item);
        if (column.empty()) item.fail("is empty", example);
        out.push_back(column);
    }
    return out;
}

void read_normalize(const Section& data, DataConfig& out) {
    if (!data.has("normalize")) return;
    const ValueRef v = data.value("normalize");
    if (v.node.IsNull()) return;  // normalize: null (or --set data.normalize=null): none
    const char* example = "e.g. normalize: {mean: [0.2860], std: [0.3530]} (gputrain data CONFIG prints them)";
    if (!v.node.IsMap()) v.fail("expected {mean: [...], std: [...]}, got " + describe(v.node), example);
    const Section n = data.child("normalize");
    if (!n.has("mean")) n.value("mean").fail("missing", example);
    if (!n.has("std")) n.value("std").fail("missing", example);
    out.normalize_mean = read_numbers(n, "mean", NumberRange::any);
    out.normalize_std = read_numbers(n, "std", NumberRange::positive);
    if (out.normalize_mean.size() != out.normalize_std.size())
        n.value("std").fail("has " + std::to_string(out.normalize_std.size()) + " values and mean has " +
                                std::to_string(out.normalize_mean.size()),
                            "give one mean and one std per channel");
}

AugmentConfig read_augment_step(const ValueRef& item) {
    AugmentConfig a;
    a.place = item.place;
    ValueRef name = item;
    YAML::Node params;
    std::string params_path = item.path, params_place = item.place;
    if (item.node.IsMap()) {
        if (item.node.size() != 1)
            item.fail("expected one augmentation, e.g. {random_crop: {padding: 4}}, got a mapping of " +
                          std::to_string(item.node.size()) + " keys",
                      "write each step as its own list item");
        const auto kv = *item.node.begin();
        name = ValueRef{item.source, kv.first, item.path, item.source->place(kv.first.Mark(), item.path)};
        params = kv.second;
        params_path = item.path + "." + kv.first.Scalar();
        params_place = item.source->place(kv.second.Mark(), params_path);
    } else if (!item.node.IsScalar()) {
        item.fail("expected an augmentation, got " + describe(item.node), kAugmentExample);
    }
    a.type = read_enum<AugmentType>(name);
    if (!item.node.IsMap()) params_path = item.path + "." + name_of(a.type);
    // random_flip: horizontal is short for {mode: horizontal}, random_rotation: 10 for {degrees: 10}.
    if (a.type == AugmentType::random_flip && params.IsScalar()) {
        a.flip = read_enum<FlipMode>(ValueRef{item.source, params, params_path, params_place});
        return a;
    }
    if (a.type == AugmentType::random_rotation && params.IsScalar()) {
        const ValueRef degrees{item.source, params, params_path + ".degrees", params_place};
        a.degrees = read_number(degrees, NumberRange::positive);
        if (a.degrees > 180.0) degrees.fail("expected at most 180 degrees either way, got " + params.Scalar());
        return a;
    }
    std::vector<std::string> known;
    switch (a.type) {
        case AugmentType::random_crop: known = {"padding", "mode"}; break;
        case AugmentType::random_flip: known = {"mode"}; break;
        case AugmentType::random_translate: known = {"factor", "height_factor", "width_factor", "mode"}; break;
        case AugmentType::cutout: known = {"size", "count"}; break;
        case AugmentType::random_rotation: known = {"degrees"}; break;
    }
    if (params.IsDefined() && !params.IsNull() && !params.IsMap())
        ValueRef{item.source, params, params_path, params_place}.fail(
            "expected the step's settings as a mapping, e.g. {" + known[0] + ": ...}, got " + describe(params));
    const Section p(*item.source, params, params_path, params_place, known);
    const auto required = [&](const std::string& key, const std::string& example) {
        if (!p.has(key)) p.value(key).fail("missing", "e.g. " + example);
    };
    switch (a.type) {
        case AugmentType::random_crop:
            required("padding", "{random_crop: {padding: 4}} (pixels added on each side, then a random crop)");
            a.padding = p.positive_int("padding", 0);
            a.mode = p.choice("mode", a.mode);
            break;
        case AugmentType::random_flip: a.flip = p.choice("mode", a.flip); break;
        case AugmentType::random_translate:
            if (!p.has("factor") && !p.has("height_factor") && !p.has("width_factor"))
                p.value("factor").fail("missing", "e.g. {random_translate: {factor: 0.1}} (the most shift, a fraction "
                                                  "of the height and width; or height_factor and width_factor)");
            if (p.has("factor") && (p.has("height_factor") || p.has("width_factor")))
                p.value("factor").fail("given with height_factor or width_factor",
                                       "give factor (both sides) or height_factor and width_factor, not both");
            a.height_factor = a.width_factor = p.number("factor", 0.0, NumberRange::fraction);
            a.height_factor = p.number("height_factor", a.height_factor, NumberRange::fraction);
            a.width_factor = p.number("width_factor", a.width_factor, NumberRange::fraction);
            a.mode = p.choice("mode", a.mode);
            break;
        case AugmentType::cutout:
            required("size", "{cutout: {size: 8}} (the side of the square set to black, in pixels)");
            a.size = p.positive_int("size", 0);
            a.count = p.positive_int("count", a.count);
            if (a.count > kMaxCutouts)
                p.value("count").fail("expected at most " + std::to_string(kMaxCutouts) + " squares, got " +
                                      std::to_string(a.count));
            break;
        case AugmentType::random_rotation:
            required("degrees", "{random_rotation: {degrees: 10}} (the most degrees either way)");
            a.degrees = p.number("degrees", 0.0, NumberRange::positive);
            if (a.degrees > 180.0)
                p.value("degrees").fail("expected at most 180 degrees either way, got " + p.value("degrees").node.Scalar());
            break;
    }
    return a;
}

void read_augment(const Section& data, DataConfig& out) {
    if (!data.has("augment")) return;
    const ValueRef v = data.value("augment");
    if (v.node.IsNull()) return;
    if (!v.node.IsSequence())
        v.fail("expected a list of augmentations, applied in order, got " + describe(v.node), kAugmentExample);
    if (v.node.size() > static_cast<size_t>(kMaxAugmentSteps))
        v.fail("has " + std::to_string(v.node.size()) + " steps; at most " + std::to_string(kMaxAugmentSteps) +
               " are supported");
    int rotations = 0;
    for (size_t i = 0; i < v.node.size(); ++i) {
        const ValueRef item = list_item(v, i);
        out.augment.push_back(read_augment_step(item));
        if (out.augment.back().type == AugmentType::random_rotation && ++rotations > 1)
            item.fail("a second random_rotation", "give one, with the range of both");
    }
}

}  // namespace

DataConfig read_data(const Section& top) {
    const Section s = top.child("data");
    DataConfig out;
    out.dataset = s.text("dataset", out.dataset);
    out.path = s.text("path", out.path);
    out.format = s.choice("format", out.format);
    // The default follows the data: 1/255 for formats of bytes (images), 1 for
    // CSV's numbers, and auto for NPY/NPZ, whose dtype decides when they are
    // read (1/255 for uint8, 1 for others). A given scale is used as it is.
    out.scale_auto = out.format == DataFormat::npy || out.format == DataFormat::npz;
    if (out.format == DataFormat::csv && out.dataset != "synthetic") out.scale = 1.0;
    if (s.has("scale") && s.value("scale").node.IsScalar() && s.value("scale").node.Scalar() == "auto")
        out.scale_auto = true;
    else if (s.has("scale"))
        out.scale_auto = false, out.scale = s.number("scale", DataConfig{}.scale, NumberRange::positive);
    out.target_columns = read_target_columns(s);
    out.tokenizer = s.choice("tokenizer", out.tokenizer);
    if (s.has("tokenizer") && out.format != DataFormat::text)
        s.value("tokenizer").fail("is only used with format: text", "remove it or set format: text");
    // Token ids are taken as they are: a scale or normalization would be ignored. A scale of 1, or
    // 1/255 (the default that resolved configs of text runs wrote before 2026-12-07), says nothing.
    if (out.format == DataFormat::text) {
        const bool said_nothing = out.scale == 1.0 || out.scale == 1.0 / 255.0;
        if (s.has("scale") && (out.scale_auto || !said_nothing))
            s.value("scale").fail("is not used with format: text (the model takes token ids as they are)", "remove it");
        if (s.has("normalize"))
            s.value("normalize").fail("is not used with format: text (the model takes token ids as they are)",
                                      "remove it");
        out.scale = 1.0;
        out.scale_auto = false;
    }
    out.tokenizer_model = s.text("tokenizer_model", out.tokenizer_model);
    out.vocab_size = s.count("vocab_size", out.vocab_size);
    const bool pieces = out.tokenizer == Tokenizer::sentencepiece;
    for (const char* key : {"tokenizer_model", "vocab_size"})
        if (s.has(key) && !pieces)
            s.value(key).fail("is only used with tokenizer: sentencepiece", "remove it or set tokenizer: sentencepiece");
    if (pieces && out.tokenizer_model.empty() == (out.vocab_size == 0))
        (s.has("tokenizer_model") ? s.value("tokenizer_model") : s.value("tokenizer"))
            .fail("sentencepiece takes a model: give data.tokenizer_model (a .model file) or data.vocab_size (a "
                  "model trained from the training text), one of the two",
                  "e.g. vocab_size: 512");
    if (s.has("sequence_stride") && out.format != DataFormat::text)
        s.value("sequence_stride").fail("is only used with format: text", "remove it or set format: text");
    out.sequence_stride = s.positive_int("sequence_stride", out.sequence_stride);
    if (s.has("vocab_size") && pieces && out.vocab_size < 4)
        s.value("vocab_size").fail("expected at least 4 pieces (SentencePiece's own 3 and one more), got " +
                                   std::to_string(out.vocab_size));
    read_normalize(s, out);
    read_augment(s, out);
    // Images and synthetic data are bytes (0 to 255): their largest value, scaled, must stay a float32.
    if ((out.format != DataFormat::csv || out.dataset == "synthetic") && !std::isfinite(static_cast<float>(255.0 * out.scale)))
        s.value("scale").fail("takes pixel values (0 to 255) past float32's range (3.4e38)",
                              "give at most 1.3e36, e.g. scale: 0.00392156862745098 (1/255)");
    out.validation_split = s.number("validation_split", out.validation_split, NumberRange::fraction);
    out.limit = s.count("limit", out.limit);
    out.test_limit = s.count("test_limit", out.test_limit);
    out.shard_files = s.boolean("shard_files", out.shard_files);
    out.resident = s.choice("resident", out.resident);
    out.crop_to_aspect_ratio = s.boolean("crop_to_aspect_ratio", out.crop_to_aspect_ratio);
    out.skip_bad_files = s.boolean("skip_bad_files", out.skip_bad_files);
    out.cache_dir = s.text("cache_dir", out.cache_dir);
    if (s.has("stream") && s.value("stream").node.IsScalar() && s.value("stream").node.Scalar() == "auto")
        out.stream_auto = true;
    else
        out.stream = s.boolean("stream", out.stream);
    out.stream_memory_fraction = s.number("stream_memory_fraction", out.stream_memory_fraction, NumberRange::positive);
    if (out.stream_memory_fraction > 1)
        s.value("stream_memory_fraction")
            .fail("expected a fraction of the memory available, at most 1, got " +
                      format_number(out.stream_memory_fraction),
                  "e.g. stream_memory_fraction: 0.5");
    if (s.has("stream_memory_fraction") && !out.stream_auto)
        s.value("stream_memory_fraction").fail("is only used with stream: auto", "remove it or set stream: auto");
    out.workers = s.positive_int("workers", out.workers);
    if (out.workers > 64) s.value("workers").fail("expected at most 64 threads, got " + std::to_string(out.workers));
    const Section synthetic = s.child("synthetic");
    out.synthetic_samples = synthetic.positive_int("samples", out.synthetic_samples);
    out.synthetic_classes = synthetic.positive_int("classes", out.synthetic_classes);
    out.synthetic_seed = synthetic.seed("seed", out.synthetic_seed);
    return out;
}

}  // namespace gputrain::config
