#include "nn/layer_args.hpp"

#include <cstdlib>

#include "core/error.hpp"
#include "core/suggest.hpp"

namespace gputrain::nn {

void LayerArgs::fail(const std::string& key, const std::string& problem) const {
    std::string where;
    auto it = spec_.where.find(key);
    if (it == spec_.where.end()) it = spec_.where.find("");
    if (it != spec_.where.end() && !it->second.empty()) where = it->second + ": ";
    std::string subject = "model.layers[" + std::to_string(index_) + "] (" + spec_.type;
    if (!spec_.name.empty()) subject += " '" + spec_.name + "'";
    subject += ")";
    throw ConfigError(where + subject + (key.empty() ? "" : ": " + key) + ": " + problem);
}

const std::string* LayerArgs::find(const std::string& key) {
    auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return nullptr;
    used_.insert(key);
    return &it->second;
}

int64_t LayerArgs::positive_int(const std::string& key) {
    const std::string* text = find(key);
    if (!text) fail(key, "missing; this layer needs it (e.g. " + key + ": 128)");
    char* end = nullptr;
    const long long v = std::strtoll(text->c_str(), &end, 10);
    if (text->empty() || *end != '\0' || v <= 0)
        fail(key, "expected a positive integer, got '" + *text + "'");
    return v;
}

double LayerArgs::number(const std::string& key, double fallback, double lo, double hi) {
    const std::string* text = find(key);
    if (!text) return fallback;
    char* end = nullptr;
    const double v = std::strtod(text->c_str(), &end);
    if (text->empty() || *end != '\0') fail(key, "expected a number, got '" + *text + "'");
    if (!(v >= lo && v < hi))
        fail(key, "must be in [" + std::to_string(lo).substr(0, 3) + ", " + std::to_string(hi).substr(0, 3) +
                      "), got " + *text);
    return v;
}

bool LayerArgs::flag(const std::string& key, bool fallback) {
    const std::string* text = find(key);
    if (!text) return fallback;
    if (*text == "true") return true;
    if (*text == "false") return false;
    fail(key, "expected true or false, got '" + *text + "'");
}

std::string LayerArgs::word(const std::string& key, const std::string& fallback) {
    const std::string* text = find(key);
    return text ? *text : fallback;
}

void LayerArgs::finish(const std::vector<std::string>& known_keys) const {
    for (const auto& [key, value] : spec_.params) {
        if (used_.count(key)) continue;
        const std::string known = known_keys.empty() ? "none" : join_names(known_keys);
        fail(key, "unknown parameter for " + spec_.type + did_you_mean(key, known_keys) + "; it takes: " + known);
    }
}

}  // namespace gputrain::nn
