#include "config/section_keys.hpp"

#include "core/suggest.hpp"

#include <stdexcept>
#include <utility>

namespace gputrain::config {

namespace {

bool contains(const std::vector<std::string>& keys, const std::string& key) {
    for (const auto& k : keys)
        if (k == key) return true;
    return false;
}

std::string joined(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

}  // namespace

const std::vector<std::string>& keys_of(const std::string& path) {
    for (const auto& s : section_keys())
        if (s.path == path) return s.keys;
    throw std::out_of_range("no config section '" + path + "'");
}

std::string home_of_key(const std::string& path, const std::string& key) {
    std::vector<std::string> names{key};
    // What users of Keras and PyTorch call some keys (core/suggest.hpp's table).
    for (const NameAlias& a : name_aliases())
        if (key == a.name && *a.means) names.push_back(a.means);
    const SectionKeys* here = nullptr;  // null for a section not in the table
    for (const auto& s : section_keys())
        if (s.path == path) here = &s;
    for (const auto& name : names) {
        if (name != key && here && contains(here->keys, name)) return joined(path, name);
        // Sections are searched in file order; "type" and "seed" are in
        // several, so only names that no two sections share are sent elsewhere.
        std::string found;
        int homes = 0;
        for (const auto& s : section_keys())
            if (s.path != path && contains(s.keys, name)) {
                found = joined(s.path, name);
                ++homes;
            }
        if (homes == 1) return found;
    }
    return "";
}

}  // namespace gputrain::config
