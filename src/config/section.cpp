#include "config/section.hpp"

#include <cmath>

#include "config/section_keys.hpp"
#include "core/suggest.hpp"
#include "config/scalar_text.hpp"

namespace gputrain::config {

std::string describe(const YAML::Node& node) {
    if (!node.IsDefined() || node.IsNull()) return "nothing";
    if (node.IsSequence()) return "a list";
    if (node.IsMap()) return "a mapping";
    return "'" + node.Scalar() + "'";
}

namespace {

// The scalar text of `value`, or a failure naming what was expected.
const std::string& scalar_or_fail(const ValueRef& value, const std::string& expected) {
    if (!value.node.IsScalar()) value.fail("expected " + expected + ", got " + describe(value.node));
    return value.node.Scalar();
}

}  // namespace

int64_t read_positive_int(const ValueRef& value) {
    const std::string expected = "a positive integer";
    const auto n = parse_int(scalar_or_fail(value, expected));
    if (!n || *n <= 0) value.fail("expected " + expected + ", got " + describe(value.node));
    return *n;
}

int64_t read_count(const ValueRef& value) {
    const std::string expected = "an integer >= 0";
    const auto n = parse_int(scalar_or_fail(value, expected));
    if (!n || *n < 0) value.fail("expected " + expected + ", got " + describe(value.node));
    return *n;
}

uint64_t read_seed(const ValueRef& value) {
    const std::string expected = "an integer >= 0";
    const auto n = parse_uint(scalar_or_fail(value, expected));
    if (!n) value.fail("expected " + expected + ", got " + describe(value.node));
    return *n;
}

double read_number(const ValueRef& value, NumberRange range) {
    std::string expected;
    switch (range) {
        case NumberRange::positive: expected = "a positive number"; break;
        case NumberRange::non_negative: expected = "a number >= 0"; break;
        case NumberRange::fraction: expected = "a number in [0, 1)"; break;
        case NumberRange::any: expected = "a number"; break;
    }
    const auto x = parse_number(scalar_or_fail(value, expected));
    const bool ok = x && std::isfinite(*x) &&
                    (range == NumberRange::positive       ? *x > 0
                     : range == NumberRange::non_negative ? *x >= 0
                     : range == NumberRange::fraction     ? *x >= 0 && *x < 1
                                                          : true);
    if (!ok) value.fail("expected " + expected + ", got " + describe(value.node));
    return *x;
}

bool read_bool(const ValueRef& value) {
    const std::string expected = "true or false";
    const auto b = parse_bool(scalar_or_fail(value, expected));
    if (!b) value.fail("expected " + expected + ", got " + describe(value.node));
    return *b;
}

std::string read_text(const ValueRef& value) {
    if (value.node.IsNull()) return "";
    return scalar_or_fail(value, "a string");
}

std::string read_choice(const ValueRef& value, const NameSet& names) {
    const std::string known = join_names(names.names);
    if (!value.node.IsScalar())
        value.fail("expected one of " + known + ", got " + describe(value.node));
    const std::string& name = value.node.Scalar();
    for (const auto& n : names.names)
        if (n == name) return name;
    value.fail("unknown " + names.noun + " '" + name + "'" + did_you_mean(name, names.names),
               "known " + names.plural + ": " + known);
}

Section::Section(ConfigSource& source, const YAML::Node& node, std::string path, std::string place,
                 const std::vector<std::string>& known)
    : Section(source, node, std::move(path), std::move(place), &known) {}

Section Section::open(ConfigSource& source, const YAML::Node& node, std::string path, std::string place) {
    return Section(source, node, std::move(path), std::move(place), nullptr);
}

Section::Section(ConfigSource& source, const YAML::Node& node, std::string path, std::string place,
                 const std::vector<std::string>* known)
    : source_(&source), path_(std::move(path)), place_(std::move(place)) {
    if (path_.empty()) source_->note_given(path_, place_);  // keys below note themselves in their parent
    if (!node.IsDefined() || node.IsNull()) return;
    if (!node.IsMap()) fail("expected a mapping, got " + describe(node));
    for (const auto& pair : node) {
        const YAML::Node key_node = pair.first;
        const YAML::Node value = pair.second;
        if (!key_node.IsScalar())
            source_->fail(source_->place(key_node.Mark(), path_), path_,
                          "keys must be names, got " + describe(key_node));
        const std::string key = key_node.Scalar();
        const std::string key_path = join_path(path_, key);
        const std::string key_place = source_->place(key_node.Mark(), key_path);
        if (const Entry* first = find(key))
            source_->fail(key_place, key_path, "duplicate key (first at " + first->key_place + ")",
                          "remove one");
        if (known) {
            bool is_known = false;
            for (const auto& k : *known) is_known = is_known || k == key;
            if (!is_known) {
                const std::string suggestion = did_you_mean(key, *known);
                if (!suggestion.empty()) source_->fail(key_place, key_path, "unknown key" + suggestion, "");
                // A key of another section, or another name for one of this one's.
                const std::string home = home_of_key(path_, key);
                if (!home.empty()) source_->fail(key_place, key_path, "unknown key (did you mean '" + home + "'?)", "");
                source_->fail(key_place, key_path, "unknown key", "known keys: " + join_names(*known));
            }
        }
        // A null value (`key:` alone) has its mark on the next line: point at the key.
        const bool point_at_key = value.IsNull() || value.Mark().is_null();
        const std::string value_place =
            point_at_key ? key_place : source_->place(value.Mark(), key_path);
        entries_.push_back({key, value, key_place, value_place});
    }
    for (const auto& e : entries_) source_->note_given(join_path(path_, e.key), e.value_place);
}

const Section::Entry* Section::find(const std::string& key) const {
    for (const auto& e : entries_)
        if (e.key == key) return &e;
    return nullptr;
}

std::vector<std::string> Section::keys() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) out.push_back(e.key);
    return out;
}

std::string Section::key_place(const std::string& key) const {
    const Entry* e = find(key);
    return e ? e->key_place : place_;
}

ValueRef Section::value(const std::string& key) const {
    const Entry* e = find(key);
    if (!e) return {source_, YAML::Node(), key_path(key), place_};
    return {source_, e->value, key_path(key), e->value_place};
}

int64_t Section::positive_int(const std::string& key, int64_t fallback) const {
    return has(key) ? read_positive_int(value(key)) : fallback;
}

int64_t Section::count(const std::string& key, int64_t fallback) const {
    return has(key) ? read_count(value(key)) : fallback;
}

uint64_t Section::seed(const std::string& key, uint64_t fallback) const {
    return has(key) ? read_seed(value(key)) : fallback;
}

double Section::number(const std::string& key, double fallback, NumberRange range) const {
    return has(key) ? read_number(value(key), range) : fallback;
}

bool Section::boolean(const std::string& key, bool fallback) const {
    return has(key) ? read_bool(value(key)) : fallback;
}

std::string Section::text(const std::string& key, const std::string& fallback) const {
    return has(key) ? read_text(value(key)) : fallback;
}

Section Section::child(const std::string& key) const { return child(key, keys_of(key_path(key))); }

Section Section::child(const std::string& key, const std::vector<std::string>& known) const {
    const Entry* e = find(key);
    if (!e) return Section(*source_, YAML::Node(), key_path(key), place_, known);
    return Section(*source_, e->value, key_path(key), e->value_place, known);
}

}  // namespace gputrain::config
