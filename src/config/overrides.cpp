#include "config/overrides.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/error.hpp"

namespace gputrain::config {

namespace {

bool all_digits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string trim(const std::string& s) {
    const size_t first = s.find_first_not_of(" \t");
    if (first == std::string::npos) return "";
    return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// The index a step names in a list: "[2]" or "2".
std::optional<size_t> list_index(const std::string& step) {
    const std::string digits = step.front() == '[' ? step.substr(1, step.size() - 2) : step;
    if (!all_digits(digits) || digits.size() > 9) return std::nullopt;
    return static_cast<size_t>(std::stoul(digits));
}

// The value node of `key` in mapping `map`, or an undefined node.
YAML::Node find_key(const YAML::Node& map, const std::string& key) {
    for (const auto& pair : map)
        if (pair.first.IsScalar() && pair.first.Scalar() == key) return pair.second;
    return YAML::Node(YAML::NodeType::Undefined);
}

class OverrideWriter {
public:
    OverrideWriter(ConfigSource& source, const std::string& text)
        : source_(source), text_(text), place_("--set " + text) {}

    void apply(YAML::Node& root) {
        const size_t eq = text_.find('=');
        if (eq == std::string::npos)
            source_.fail(place_, "", "expected KEY.PATH=VALUE", "e.g. --set training.epochs=10");
        key_text_ = trim(text_.substr(0, eq));
        const auto steps = split_key_path(key_text_);
        if (steps.empty())
            source_.fail(place_, "", "malformed key path '" + key_text_ + "'",
                         "write keys joined by dots, e.g. training.epochs or model.layers[0].units");
        YAML::Node value;
        try {
            value = YAML::Load(text_.substr(eq + 1));
        } catch (const YAML::Exception& e) {
            source_.fail(place_, key_text_, "value is not valid YAML (" + e.msg + ")");
        }
        write(root, steps, value);
    }

private:
    void write(YAML::Node node, const std::vector<std::string>& steps, const YAML::Node& value) {
        std::string path;
        for (size_t k = 0; k < steps.size(); ++k) {
            const std::string& step = steps[k];
            const bool last = k + 1 == steps.size();
            YAML::Node child;
            std::string child_path;
            if (node.IsSequence()) {
                const auto index = list_index(step);
                if (!index)
                    source_.fail(place_, path, "is a list, '" + step + "' is not an index",
                                 "pick an item by its index, e.g. " + index_path(path, 0));
                child_path = index_path(path, *index);
                if (*index >= node.size())
                    source_.fail(place_, child_path, "no such item; " + path + " has " +
                                 std::to_string(node.size()) + " items",
                                 "only existing items can be changed with --set; replace the whole list instead");
                child.reset(node[*index]);
            } else {
                if (step.front() == '[')
                    source_.fail(place_, path, "is not a list, '" + step + "' cannot index it");
                child_path = join_path(path, step);
                child.reset(find_key(node, step));
                if (!child.IsDefined()) {
                    node[step] = YAML::Node(YAML::NodeType::Null);
                    child.reset(find_key(node, step));
                    source_.pin(child_path, place_);  // the key itself is the override's
                }
            }
            if (last) {
                child = value;  // assignment writes through the handle into the tree
                source_.pin(child_path, place_);
                return;
            }
            node.reset(descend_into(child, child_path, steps[k + 1]));  // reset() rebinds; = would overwrite
            path = child_path;
        }
    }

    // `child` as a container that the next step can go into.
    YAML::Node descend_into(YAML::Node child, const std::string& child_path, const std::string& next) {
        if (child.IsMap() || child.IsSequence()) return child;
        if (child.IsNull()) {
            child = YAML::Node(YAML::NodeType::Map);
            return child;
        }
        // `loss: NAME` is shorthand for `loss: {name: NAME}`, `optimizer: TYPE`
        // for `optimizer: {type: TYPE}`: expand them so that their other keys
        // can be set; the name keeps pointing at the file.
        if (child_path == "loss" || child_path == "optimizer") {
            const std::string name_place = source_.place(child.Mark(), child_path);
            YAML::Node expanded(YAML::NodeType::Map);
            expanded[child_path == "loss" ? "name" : "type"] = YAML::Node(child.Scalar());
            child = expanded;
            source_.pin(child_path, name_place);
            return child;
        }
        source_.fail(place_, child_path, "holds a value, not keys; cannot set '" + next + "' inside it");
    }

    ConfigSource& source_;
    std::string text_;
    std::string place_;
    std::string key_text_;
};

}  // namespace

std::vector<std::string> split_key_path(const std::string& key_path) {
    std::vector<std::string> steps;
    size_t i = 0;
    const size_t n = key_path.size();
    if (n == 0) return {};
    while (i < n) {
        if (key_path[i] == '[') {
            const size_t close = key_path.find(']', i);
            if (close == std::string::npos || steps.empty()) return {};
            const std::string digits = key_path.substr(i + 1, close - i - 1);
            if (!all_digits(digits)) return {};
            steps.push_back("[" + digits + "]");
            i = close + 1;
        } else {
            const size_t end = std::min(key_path.find_first_of(".[]", i), n);
            if (end == i) return {};
            steps.push_back(key_path.substr(i, end - i));
            i = end;
        }
        if (i < n && key_path[i] == '.') {
            if (++i == n) return {};
        } else if (i < n && key_path[i] != '[') {
            return {};
        }
    }
    return steps;
}

void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, ConfigSource& source) {
    for (const auto& text : overrides) OverrideWriter(source, text).apply(root);
}

}  // namespace gputrain::config
