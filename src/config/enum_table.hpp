// The one pattern for a config value that is one of a closed set of names
// (optimizer.type, data.format, logging.level, ...): a scoped enum in
// run_config.hpp and one table of {value, "name"} per enum, a specialisation
// of EnumTable. From the table come the parse (Section::choice, read_enum: the
// YAML or --set text to the enum, with the "unknown optimizer 'x' (did you
// mean ...)" error listing the names in table order), the name written back
// into the resolved YAML, and every name printed elsewhere (name_of). Nothing
// outside config/ compares these names as strings.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "config/names.hpp"

namespace gputrain::config {

template <typename E>
struct EnumName {
    E value;
    const char* name;  // as the config spells it
};

// Specialised for each enum with
//   static constexpr const char* noun;     // "optimizer": "unknown optimizer 'x'"
//   static constexpr const char* plural;   // "optimizers": "known optimizers: ..."
//   static constexpr std::array<EnumName<E>, N> entries;  // every value once, in the enum's
//                                                         // order (checked), as messages list them
template <typename E>
struct EnumTable;

// Whether the table lists every enumerator once, in declaration order (0, 1, ...).
template <typename E>
constexpr bool table_in_enum_order() {
    const auto& entries = EnumTable<E>::entries;
    for (std::size_t i = 0; i < entries.size(); ++i)
        if (static_cast<std::size_t>(entries[i].value) != i) return false;
    return true;
}

// The config's spelling of `value` ("adamw").
template <typename E>
constexpr const char* name_of(E value) {
    static_assert(table_in_enum_order<E>(), "EnumTable: list every value once, in the enum's order");
    const auto& entries = EnumTable<E>::entries;
    const auto i = static_cast<std::size_t>(value);
    return i < entries.size() ? entries[i].name : "?";
}

// The value a name spells, or nullopt.
template <typename E>
constexpr std::optional<E> enum_from_name(std::string_view name) {
    for (const auto& e : EnumTable<E>::entries)
        if (name == e.name) return e.value;
    return std::nullopt;
}

// The table as the NameSet read_choice reports with.
template <typename E>
const NameSet& name_set() {
    static const NameSet set = [] {
        NameSet s{EnumTable<E>::noun, EnumTable<E>::plural, {}};
        for (const auto& e : EnumTable<E>::entries) s.names.emplace_back(e.name);
        return s;
    }();
    return set;
}

}  // namespace gputrain::config
