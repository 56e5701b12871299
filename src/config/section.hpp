// Section: one mapping of the config, read key by key. Constructing it checks
// its keys (each known, none twice, unknown ones with a did-you-mean) before any
// value is read; the typed getters return the default for an absent key and fail
// with "PLACE: key.path: expected ..., got '...'" for a bad one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config_source.hpp"
#include "config/enum_table.hpp"
#include "config/names.hpp"

namespace gputrain::config {

// One value of the config and where it is: the unit the typed readers work on.
struct ValueRef {
    ConfigSource* source;
    YAML::Node node;
    std::string path;   // "training.epochs", "model.input_shape[1]"
    std::string place;  // "cfg.yaml:3:11" or "--set training.epochs=2"

    [[noreturn]] void fail(const std::string& problem, const std::string& hint = "") const {
        source->fail(place, path, problem, hint);
    }
};

// How a value is described after "got": "'abc'", "nothing", "a list", "a mapping".
std::string describe(const YAML::Node& node);

enum class NumberRange { positive, non_negative, fraction, any };  // fraction: [0, 1); any: finite

int64_t read_positive_int(const ValueRef& value);
int64_t read_count(const ValueRef& value);        // integer >= 0
uint64_t read_seed(const ValueRef& value);        // integer >= 0, 64 bits
double read_number(const ValueRef& value, NumberRange range);
bool read_bool(const ValueRef& value);
std::string read_text(const ValueRef& value);     // a scalar; nothing -> ""
std::string read_choice(const ValueRef& value, const NameSet& names);
// One of the names of E's table (enums.hpp), as its value; the error is read_choice's.
template <typename E>
E read_enum(const ValueRef& value) {
    return *enum_from_name<E>(read_choice(value, name_set<E>()));
}

class Section {
public:
    // `node` is a mapping, or null/undefined for an absent or empty section.
    // `place` is where to point for it (its parent's place when absent).
    Section(ConfigSource& source, const YAML::Node& node, std::string path, std::string place,
            const std::vector<std::string>& known);
    // A mapping whose keys are not fixed (a layer's parameters): only the
    // checks for duplicate and non-name keys apply.
    static Section open(ConfigSource& source, const YAML::Node& node, std::string path, std::string place);

    ConfigSource& source() const { return *source_; }
    const std::string& path() const { return path_; }
    const std::string& place() const { return place_; }
    std::string key_path(const std::string& key) const { return join_path(path_, key); }

    bool has(const std::string& key) const { return find(key) != nullptr; }
    std::vector<std::string> keys() const;  // in file order
    std::string key_place(const std::string& key) const;  // the section's place when absent
    // The value of `key` with its path and place; the section's place when absent.
    ValueRef value(const std::string& key) const;

    int64_t positive_int(const std::string& key, int64_t fallback) const;
    int64_t count(const std::string& key, int64_t fallback) const;
    uint64_t seed(const std::string& key, uint64_t fallback) const;
    double number(const std::string& key, double fallback, NumberRange range) const;
    bool boolean(const std::string& key, bool fallback) const;
    std::string text(const std::string& key, const std::string& fallback) const;
    template <typename E>
    E choice(const std::string& key, E fallback) const {
        return has(key) ? read_enum<E>(value(key)) : fallback;
    }

    // The mapping under `key` (empty when absent or null) with its own known keys.
    Section child(const std::string& key, const std::vector<std::string>& known) const;
    // The same with the section's keys from section_keys.hpp.
    Section child(const std::string& key) const;

    [[noreturn]] void fail(const std::string& problem, const std::string& hint = "") const {
        source_->fail(place_, path_, problem, hint);
    }

private:
    struct Entry {
        std::string key;
        YAML::Node value;
        std::string key_place;
        std::string value_place;
    };
    Section(ConfigSource& source, const YAML::Node& node, std::string path, std::string place,
            const std::vector<std::string>* known);
    const Entry* find(const std::string& key) const;

    ConfigSource* source_;
    std::string path_;
    std::string place_;
    std::vector<Entry> entries_;
};

}  // namespace gputrain::config
