#include "config/config_diff.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "config/yaml_guard.hpp"
#include "core/error.hpp"

namespace gputrain::config {

namespace {

using Flat = std::vector<std::pair<std::string, std::string>>;  // key path -> value text, in file order

// Far more than any config holds (the reference one has about 60 nodes), far
// less than an alias bomb expands to.
constexpr size_t kMaxNodes = 20000;
constexpr int kMaxDepth = 64;
constexpr size_t kMaxValueChars = 120;

// Whether walking `node` stays within the limits; a cyclic node never does.
bool bounded(const YAML::Node& node, int depth, size_t& budget) {
    if (depth > kMaxDepth || budget == 0) return false;
    --budget;
    if (node.IsMap()) {
        for (const auto& pair : node)
            if (!bounded(pair.first, depth + 1, budget) || !bounded(pair.second, depth + 1, budget)) return false;
    } else if (node.IsSequence()) {
        for (const auto& item : node)
            if (!bounded(item, depth + 1, budget)) return false;
    }
    return true;
}

// One line, whatever the text holds: control characters (C0, DEL, C1) and
// the Unicode line and paragraph separators escaped; cut after kMaxValueChars.
std::string printable(const std::string& text) {
    std::string out;
    size_t i = 0;
    for (; i < text.size(); ++i) {
        // Cut before a character that starts past the limit (never inside one: UTF-8 continuation bytes are 10xxxxxx).
        if (out.size() >= kMaxValueChars && (static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) break;
        const auto u = static_cast<unsigned char>(text[i]);
        char hex[12];
        if (u < 0x20 || u == 0x7f) {
            std::snprintf(hex, sizeof hex, "\\x%02x", u);
            out += hex;
        } else if (u == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
            std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
            out += hex;
            ++i;
        } else if (u == 0xe2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
                   (static_cast<unsigned char>(text[i + 2]) == 0xa8 || static_cast<unsigned char>(text[i + 2]) == 0xa9)) {
            out += static_cast<unsigned char>(text[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
            i += 2;
        } else {
            out += text[i];
        }
    }
    return i < text.size() ? out + "..." : out;
}

std::string flow_text(const YAML::Node& node) {
    if (node.IsScalar()) return node.Scalar();
    if (node.IsNull()) return "null";
    YAML::Emitter out;
    out << YAML::Flow << node;
    return out.c_str();
}

// Mappings are walked key by key, and lists that hold mappings (model.layers)
// item by item, so a change names its key (model.layers[2].rate); anything
// else is one value.
void flatten(const YAML::Node& node, const std::string& path, Flat& out) {
    if (node.IsMap()) {
        for (const auto& pair : node) {
            const std::string key = printable(pair.first.as<std::string>());
            flatten(pair.second, path.empty() ? key : path + "." + key, out);
        }
        return;
    }
    if (node.IsSequence()) {
        bool has_map = false;
        for (const auto& item : node) has_map = has_map || item.IsMap();
        if (has_map) {
            for (size_t i = 0; i < node.size(); ++i) flatten(node[i], path + "[" + std::to_string(i) + "]", out);
            return;
        }
    }
    out.emplace_back(path, flow_text(node));
}

// Keys whose values are text whatever they look like: a layer named "1.0"
// renamed "1", a run dir "yes" renamed "on", are changes.
bool text_key(const std::string& path) {
    const size_t dot = path.rfind('.');
    const std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
    return key == "name" || key == "run_dir" || key == "dir" || key == "path" || key == "dataset" ||
           key == "metrics_file";
}

// The text a scalar is compared by: numbers by value, booleans by truth.
std::string canonical(const std::string& text) {
    std::string lower;
    for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "true" || lower == "yes" || lower == "on") return "true";
    if (lower == "false" || lower == "no" || lower == "off") return "false";
    // Whole numbers exactly (a 64-bit seed is past what a double holds), with any sign or leading zeros.
    {
        const char* begin = text.data() + (text.size() > 1 && text[0] == '+' ? 1 : 0);
        const char* end = text.data() + text.size();
        int64_t i = 0;
        uint64_t u = 0;
        if (auto r = std::from_chars(begin, end, i); r.ec == std::errc() && r.ptr == end && begin != end)
            return std::to_string(i);
        if (auto r = std::from_chars(begin, end, u); r.ec == std::errc() && r.ptr == end && begin != end)
            return std::to_string(u);
    }
    if (!text.empty()) {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end && *end == '\0' && std::isfinite(v) && !std::isspace(static_cast<unsigned char>(text[0]))) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.17g", v);
            return buf;
        }
    }
    return text;
}

// Throws (YAML::Exception, ConfigError) or returns false when `yaml` cannot
// be compared (with `need_model`: also when it has no model section).
bool flat(const std::string& yaml, bool need_model, Flat& out) {
    const YAML::Node root = YAML::Load(yaml);
    size_t budget = kMaxNodes;
    if (!root.IsMap() || !bounded(root, 0, budget)) return false;
    if (need_model && !root["model"]) return false;
    flatten(root, "", out);
    return true;
}

// The top-level section a nested key path is in ("early_stopping" of
// "early_stopping.patience"); "" for a top-level scalar.
std::string top_section(const std::string& path) {
    const size_t end = path.find_first_of(".[");
    return end == std::string::npos ? std::string() : path.substr(0, end);
}

std::set<std::string> top_sections(const Flat& flat) {
    std::set<std::string> sections;
    for (const auto& entry : flat) sections.insert(top_section(entry.first));
    return sections;
}

// A section that only one side has reads as one change of the whole section,
// "early_stopping: (none) -> {monitor: val_loss, patience: 3}", not one per key.
void add_to_section(std::vector<std::pair<std::string, std::string>>& sections, const std::string& section,
                    const std::string& path, const std::string& value) {
    if (sections.empty() || sections.back().first != section) sections.push_back({section, "{"});
    std::string& keys = sections.back().second;
    const size_t key = section.size() + (path[section.size()] == '.' ? 1 : 0);  // "[0].x" stays as it is
    keys += (keys.size() > 1 ? ", " : "") + path.substr(key) + ": " + value;
}

ConfigChanges compare(const std::string& before_yaml, const std::string& after_yaml, bool need_model,
                      const Resolve& resolve) {
    ConfigChanges result;
    Flat before, after;
    try {
        // The earlier text may come from a checkpoint's metadata, which anyone can write.
        check_yaml_terminates(before_yaml, "the earlier config");
        result.readable = flat(before_yaml, need_model, before) && flat(after_yaml, false, after);
        if (result.readable && resolve) {
            // Only once the text is known to be a bounded mapping.
            Flat resolved;
            if (flat(resolve(before_yaml), need_model, resolved)) before = std::move(resolved);
        }
    } catch (const YAML::Exception&) {
        result.readable = false;
    } catch (const ConfigError&) {
        result.readable = false;
    }
    if (!result.readable) return result;
    std::map<std::string, std::string> old_values(before.begin(), before.end());
    const std::set<std::string> sections_before = top_sections(before), sections_after = top_sections(after);
    std::vector<std::pair<std::string, std::string>> added;  // a section only `after` has: its keys as one change
    for (const auto& [path, value] : after) {
        const auto it = old_values.find(path);
        const std::string section = top_section(path);
        if (it == old_values.end() && !section.empty() && !sections_before.count(section))
            add_to_section(added, section, path, value);
        else if (it == old_values.end())
            result.changes.push_back(path + ": (none) -> " + printable(value));
        else if (text_key(path) ? it->second != value : canonical(it->second) != canonical(value))
            result.changes.push_back(path + ": " + printable(it->second) + " -> " + printable(value));
        if (it != old_values.end()) old_values.erase(it);
    }
    for (const auto& [section, keys] : added) result.changes.push_back(section + ": (none) -> " + printable(keys + "}"));
    std::vector<std::pair<std::string, std::string>> removed;
    for (const auto& [path, value] : before) {
        if (!old_values.count(path)) continue;
        const std::string section = top_section(path);
        if (!section.empty() && !sections_after.count(section))
            add_to_section(removed, section, path, value);
        else
            result.changes.push_back(path + ": " + printable(value) + " -> (none)");
    }
    for (const auto& [section, keys] : removed) result.changes.push_back(section + ": " + printable(keys + "}") + " -> (none)");
    return result;
}

}  // namespace

void drop_same_run_dir(ConfigChanges& changes, const std::string& before_yaml, const std::string& run_dir) {
    const auto it = std::find_if(changes.changes.begin(), changes.changes.end(),
                                 [](const std::string& c) { return c.rfind("run_dir: ", 0) == 0; });
    if (it == changes.changes.end()) return;
    std::string before;
    try {
        // Only read when a run_dir change was found, so the text is a readable, bounded mapping.
        const YAML::Node root = YAML::Load(before_yaml);
        if (!root["run_dir"] || !root["run_dir"].IsScalar()) return;
        before = root["run_dir"].Scalar();
    } catch (const YAML::Exception&) {
        return;
    }
    std::error_code ec;
    if (!before.empty() && std::filesystem::equivalent(before, run_dir, ec) && !ec) changes.changes.erase(it);
}

std::string ConfigChanges::text(size_t limit) const {
    std::string out;
    for (size_t i = 0; i < changes.size() && i < limit; ++i) out += (i ? "; " : "") + changes[i];
    if (changes.size() > limit) out += "; and " + std::to_string(changes.size() - limit) + " more";
    return out;
}

ConfigChanges changed_keys(const std::string& before_yaml, const std::string& after_yaml, const Resolve& resolve) {
    return compare(before_yaml, after_yaml, false, resolve);
}

ConfigChanges changed_model_keys(const std::string& before_yaml, const std::string& after_yaml,
                                 const Resolve& resolve) {
    ConfigChanges result = compare(before_yaml, after_yaml, true, resolve);
    std::vector<std::string> kept;
    for (auto& change : result.changes) {
        const auto starts = [&](const char* prefix) { return change.rfind(prefix, 0) == 0; };
        if (starts("model.") || starts("loss.") || starts("loss:") || starts("data.scale:"))
            kept.push_back(std::move(change));
    }
    result.changes = std::move(kept);
    return result;
}

}  // namespace gputrain::config
