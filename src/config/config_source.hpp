// ConfigSource: where each part of a config came from, so that every error can
// start with a place: "cfg.yaml:12:5" for text from the file, "--set a.b=1" for
// a value an override wrote. Errors read "PLACE: key.path: problem; hint".
#pragma once

#include <map>
#include <string>

#include <yaml-cpp/yaml.h>

namespace gputrain::config {

// "PLACE: key.path: problem; hint" (no "key.path: " when path is empty, no
// "; hint" when hint is empty).
std::string config_message(const std::string& place, const std::string& path,
                           const std::string& problem, const std::string& hint = "");

// "model.layers[1]" + "units" -> "model.layers[1].units"; "" + "model" -> "model".
std::string join_path(const std::string& path, const std::string& key);
std::string index_path(const std::string& path, size_t index);  // "model.layers[1]"

class ConfigSource {
public:
    explicit ConfigSource(std::string name) : name_(std::move(name)) {}
    const std::string& name() const { return name_; }

    // The place of the node at `path` with `mark`: a pinned place of the path
    // or of its nearest pinned ancestor (overrides) wins over the mark.
    std::string place(const YAML::Mark& mark, const std::string& path) const;
    // "file:line:col", 1-based.
    std::string file_place(const YAML::Mark& mark) const;

    // Everything at or under `path` now comes from `place` ("--set ...");
    // older pins under it are dropped (their nodes were replaced).
    void pin(const std::string& path, const std::string& place);

    // Keys read from the config, with the place of their value, for checks
    // that relate keys to each other after reading.
    void note_given(const std::string& path, const std::string& place);
    bool given(const std::string& path) const { return given_.count(path) != 0; }
    // The place of `path`, or of its nearest given ancestor, or the top.
    std::string place_of(const std::string& path) const;

    [[noreturn]] void fail(const std::string& place, const std::string& path,
                           const std::string& problem, const std::string& hint = "") const;
    // fail() at place_of(path).
    [[noreturn]] void fail_at(const std::string& path, const std::string& problem,
                              const std::string& hint = "") const;

private:
    std::string name_;
    std::map<std::string, std::string> pins_;
    std::map<std::string, std::string> given_;
};

// "model.layers[1].units" -> "model.layers[1]" -> "model.layers" -> "model" -> "".
std::string parent_path(const std::string& path);

}  // namespace gputrain::config
