#include "config/config_source.hpp"

#include "core/error.hpp"

namespace gputrain::config {

std::string config_message(const std::string& place, const std::string& path,
                           const std::string& problem, const std::string& hint) {
    std::string message = place + ": ";
    if (!path.empty()) message += path + ": ";
    message += problem;
    if (!hint.empty()) message += "; " + hint;
    return message;
}

std::string join_path(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
}

std::string index_path(const std::string& path, size_t index) {
    return path + "[" + std::to_string(index) + "]";
}

std::string parent_path(const std::string& path) {
    const size_t cut = path.find_last_of(".[");
    return cut == std::string::npos ? std::string() : path.substr(0, cut);
}

namespace {

bool is_at_or_under(const std::string& path, const std::string& ancestor) {
    if (path.size() < ancestor.size() || path.compare(0, ancestor.size(), ancestor) != 0) return false;
    return path.size() == ancestor.size() || path[ancestor.size()] == '.' || path[ancestor.size()] == '[';
}

}  // namespace

std::string ConfigSource::file_place(const YAML::Mark& mark) const {
    if (mark.is_null()) return name_;
    return name_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

std::string ConfigSource::place(const YAML::Mark& mark, const std::string& path) const {
    for (std::string p = path;; p = parent_path(p)) {
        const auto pinned = pins_.find(p);
        if (pinned != pins_.end()) return pinned->second;
        if (p.empty()) break;
    }
    return file_place(mark);
}

void ConfigSource::pin(const std::string& path, const std::string& place) {
    for (auto it = pins_.begin(); it != pins_.end();) {
        it = is_at_or_under(it->first, path) ? pins_.erase(it) : std::next(it);
    }
    pins_[path] = place;
}

void ConfigSource::note_given(const std::string& path, const std::string& place) {
    given_[path] = place;
}

std::string ConfigSource::place_of(const std::string& path) const {
    for (std::string p = path;; p = parent_path(p)) {
        const auto found = given_.find(p);
        if (found != given_.end()) return found->second;
        if (p.empty()) break;
    }
    return name_;
}

void ConfigSource::fail(const std::string& place, const std::string& path,
                        const std::string& problem, const std::string& hint) const {
    throw ConfigError(config_message(place, path, problem, hint));
}

void ConfigSource::fail_at(const std::string& path, const std::string& problem,
                           const std::string& hint) const {
    fail(place_of(path), path, problem, hint);
}

}  // namespace gputrain::config
