#include "nn/layer_args.hpp"

#include <cerrno>
#include <cstdlib>

#include "config/scalar_text.hpp"
#include "core/error.hpp"
#include "core/shape.hpp"
#include "core/suggest.hpp"

namespace gputrain::nn {

std::string LayerArgs::place(const std::string& key) const {
    auto it = spec_.where.find(key);
    if (it == spec_.where.end()) it = spec_.where.find("");
    return it != spec_.where.end() && !it->second.empty() ? it->second + ": " : "";
}

void LayerArgs::fail(const std::string& key, const std::string& problem) const {
    reject_unknown(key);
    throw_at(key, problem);
}

void LayerArgs::reject_unknown(const std::string& except) const {
    if (!known_set_) return;
    for (const auto& [key, value] : spec_.params) {
        if (key == except || used_.count(key)) continue;
        bool known = false;
        for (const auto& k : known_) known = known || k == key;
        if (known) continue;
        const std::string list = known_.empty() ? "none" : join_names(known_);
        // Every layer also takes name and inputs: `input: a` is a typo of the latter.
        std::vector<std::string> candidates(known_);
        candidates.insert(candidates.end(), {"name", "inputs"});
        throw_at(key, "unknown parameter for " + spec_.type + did_you_mean(key, candidates) + "; it takes: " + list);
    }
}

void LayerArgs::throw_at(const std::string& key, const std::string& problem) const {
    const std::string where = place(key);
    // As written (the path --set takes): a layer of model.layers, or a block's
    // layer named by its instance; built in code, by its index.
    std::string subject;
    if (spec_.scoped && !spec_.path.empty())
        subject = "layer '" + spec_.name + "' (" + spec_.type + ", " + spec_.path + ")";
    else
        subject = (spec_.path.empty() ? "model.layers[" + std::to_string(index_) + "]" : spec_.path) + " (" +
                  spec_.type + (spec_.name.empty() ? "" : " '" + spec_.name + "'") + ")";
    throw ConfigError(where + subject + (key.empty() ? "" : ": " + key) + ": " + problem);
}

void LayerArgs::missing(const std::string& key, const std::string& example) const {
    fail(key, "missing; this layer needs it (e.g. " + example + ")");
}

const std::string* LayerArgs::find(const std::string& key) {
    auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return nullptr;
    used_.insert(key);
    return &it->second;
}

namespace {

// A layer's sizes (units, filters, kernel, strides, ...) are counted with int
// by the backends.
constexpr long long kMaxLayerInt = kMaxSampleElements;
const std::string kTooLarge = " is too large; layer sizes are at most " + std::to_string(kMaxLayerInt);

// Whole text as a base-10 integer; false when it is not one or does not fit in long long.
bool parse_int(const std::string& text, long long& out) {
    char* end = nullptr;
    errno = 0;
    out = std::strtoll(text.c_str(), &end, 10);
    return !text.empty() && *end == '\0' && errno != ERANGE;
}

bool all_digits(const std::string& text) {
    size_t i = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
    if (i == text.size()) return false;
    for (; i < text.size(); ++i)
        if (text[i] < '0' || text[i] > '9') return false;
    return true;
}

}  // namespace

int64_t LayerArgs::positive_int(const std::string& key) {
    const std::string* text = find(key);
    if (!text) missing(key, key + ": 128");
    long long v = 0;
    const bool parsed = parse_int(*text, v);
    if (parsed ? v > kMaxLayerInt : all_digits(*text) && (*text)[0] != '-') fail(key, *text + kTooLarge);
    if (!parsed || v <= 0) fail(key, "expected a positive integer, got '" + *text + "'");
    record(key, std::to_string(v));
    return v;
}

double LayerArgs::number(const std::string& key, double fallback, double lo, double hi) {
    const std::string* text = find(key);
    if (!text) {
        record(key, config::format_number(fallback));
        return fallback;
    }
    char* end = nullptr;
    const double v = std::strtod(text->c_str(), &end);
    if (text->empty() || *end != '\0') fail(key, "expected a number, got '" + *text + "'");
    if (!(v >= lo && v < hi))
        fail(key, "must be in [" + std::to_string(lo).substr(0, 3) + ", " + std::to_string(hi).substr(0, 3) +
                      "), got " + *text);
    record(key, config::format_number(v));
    return v;
}

bool LayerArgs::flag(const std::string& key, bool fallback) {
    const std::string* text = find(key);
    const std::optional<bool> value = text ? config::parse_bool(*text) : fallback;
    // As every other boolean of the config: true/false, yes/no, on/off.
    if (value) {
        record(key, *value ? "true" : "false");
        return *value;
    }
    fail(key, "expected true or false, got '" + *text + "'");
}

std::string LayerArgs::word(const std::string& key, const std::string& fallback) {
    const std::string* text = find(key);
    record(key, text ? *text : fallback);
    return text ? *text : fallback;
}

std::string LayerArgs::choice(const std::string& key, const std::string& fallback,
                              const std::vector<std::string>& choices) {
    const std::string* text = find(key);
    for (const auto& c : choices)
        if (text ? *text == c : fallback == c) {
            record(key, c);
            return c;
        }
    if (!text) return fallback;
    fail(key, "expected " + join_names(choices, " or ") + ", got '" + *text + "'" + did_you_mean(*text, choices));
}

Activation LayerArgs::activation(const std::string& key, Activation fallback) {
    const std::string* text = find(key);
    Activation act = fallback;
    if (text && !parse_activation(*text, act))
        fail(key, "unknown activation '" + *text + "'" + did_you_mean(*text, activation_names()) +
                      "; known: " + join_names(activation_names()));
    record(key, activation_name(act));
    return act;
}

namespace {

// Splits "3,5" (how config/ keeps a list) into its items.
std::vector<std::string> list_items(const std::string& text) {
    std::vector<std::string> items;
    size_t start = 0;
    for (;;) {
        const size_t comma = text.find(',', start);
        items.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) return items;
        start = comma + 1;
    }
}

}  // namespace

IntPair LayerArgs::int_pair(const std::string& key, std::optional<IntPair> fallback) {
    const std::string* text = find(key);
    if (!text) {
        if (!fallback) missing(key, key + ": 3 or " + key + ": [3, 3]");
        record(key, std::to_string(fallback->h) + "," + std::to_string(fallback->w));
        return *fallback;
    }
    const std::vector<std::string> items = list_items(*text);
    const std::string expected = "expected a positive integer or a list of two (e.g. [3, 3]), got ";
    if (items.size() > 2) fail(key, expected + "[" + *text + "]");
    long long v[2] = {0, 0};
    for (size_t i = 0; i < items.size(); ++i) {
        const bool parsed = parse_int(items[i], v[i]);
        if (parsed ? v[i] > kMaxLayerInt : all_digits(items[i]) && items[i][0] != '-') fail(key, items[i] + kTooLarge);
        if (!parsed || v[i] <= 0) fail(key, expected + (items.size() == 1 ? "'" + *text + "'" : "[" + *text + "]"));
    }
    if (items.size() == 1) v[1] = v[0];
    record(key, std::to_string(v[0]) + "," + std::to_string(v[1]));
    return {v[0], v[1]};
}

std::vector<int64_t> LayerArgs::int_list(const std::string& key) {
    const std::string* text = find(key);
    if (!text) missing(key, key + ": [28, 28, 1]");
    std::vector<int64_t> out;
    for (const auto& item : list_items(*text)) {
        long long v = 0;
        const bool parsed = parse_int(item, v);
        if (parsed ? v > kMaxLayerInt || v < -kMaxLayerInt : all_digits(item)) fail(key, item + kTooLarge);
        if (!parsed) fail(key, "expected a list of integers, got [" + *text + "]");
        out.push_back(v);
    }
    std::string canonical;
    for (int64_t v : out) {
        if (!canonical.empty()) canonical += ',';
        canonical += std::to_string(v);
    }
    record(key, canonical);
    return out;
}

void LayerArgs::finish() const { reject_unknown(); }

}  // namespace gputrain::nn
