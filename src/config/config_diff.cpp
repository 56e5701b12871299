#include "config/config_diff.hpp"

#include <yaml-cpp/yaml.h>

#include <map>
#include <utility>

#include "config/yaml_guard.hpp"
#include "core/error.hpp"

namespace gputrain::config {

namespace {

using Flat = std::vector<std::pair<std::string, std::string>>;  // key path -> value text, in file order

std::string flow_text(const YAML::Node& node) {
    if (node.IsScalar()) return node.Scalar();
    if (node.IsNull()) return "null";
    YAML::Emitter out;
    out << YAML::Flow << node;
    return out.c_str();
}

// Mappings are walked key by key, and lists that hold mappings (model.layers)
// item by item, so a change names its key (model.layers[2].rate); anything
// else is one value, on one line.
void flatten(const YAML::Node& node, const std::string& path, Flat& out) {
    if (node.IsMap()) {
        for (const auto& pair : node) {
            const std::string key = pair.first.as<std::string>();
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
    std::string text = flow_text(node);
    for (char& c : text)
        if (c == '\n' || c == '\r') c = ' ';
    out.emplace_back(path, text);
}

Flat flat(const std::string& yaml) {
    Flat out;
    flatten(YAML::Load(yaml), "", out);
    return out;
}

}  // namespace

std::vector<std::string> changed_keys(const std::string& before_yaml, const std::string& after_yaml) {
    Flat before, after;
    try {
        // The earlier text may come from a checkpoint's metadata, which anyone can write.
        check_yaml_terminates(before_yaml, "the earlier config");
        before = flat(before_yaml);
        after = flat(after_yaml);
    } catch (const YAML::Exception&) {
        return {"(the earlier config is not readable YAML)"};
    } catch (const ConfigError&) {
        return {"(the earlier config is not readable YAML)"};
    }
    std::map<std::string, std::string> old_values(before.begin(), before.end());
    std::vector<std::string> changes;
    for (const auto& [path, value] : after) {
        const auto it = old_values.find(path);
        if (it == old_values.end())
            changes.push_back(path + ": (none) -> " + value);
        else if (it->second != value)
            changes.push_back(path + ": " + it->second + " -> " + value);
        if (it != old_values.end()) old_values.erase(it);
    }
    for (const auto& [path, value] : before)
        if (old_values.count(path)) changes.push_back(path + ": " + value + " -> (none)");
    return changes;
}

std::vector<std::string> changed_model_keys(const std::string& before_yaml, const std::string& after_yaml) {
    std::vector<std::string> kept;
    for (auto& change : changed_keys(before_yaml, after_yaml)) {
        const auto starts = [&](const char* prefix) { return change.rfind(prefix, 0) == 0; };
        if (starts("model.") || starts("loss.") || starts("data.scale:") || starts("("))
            kept.push_back(std::move(change));
    }
    return kept;
}

}  // namespace gputrain::config
