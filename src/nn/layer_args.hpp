// LayerArgs: reads a layer's parameters from its LayerSpec, one key at a time;
// every key must be consumed (finish() reports leftovers with "did you mean").
// Errors read "FILE:LINE:COL: model.layers[I] (TYPE): KEY: problem".
#pragma once

#include <set>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace gputrain::nn {

class LayerArgs {
public:
    LayerArgs(const config::LayerSpec& spec, int index) : spec_(spec), index_(index) {}

    int64_t positive_int(const std::string& key);                    // required
    double number(const std::string& key, double fallback, double lo, double hi);  // lo <= x < hi
    bool flag(const std::string& key, bool fallback);
    std::string word(const std::string& key, const std::string& fallback);
    bool has(const std::string& key) const { return spec_.params.count(key) > 0; }

    // Throws for every key not read, listing the ones this layer type takes.
    void finish(const std::vector<std::string>& known_keys) const;

    [[noreturn]] void fail(const std::string& key, const std::string& problem) const;

private:
    const std::string* find(const std::string& key);

    const config::LayerSpec& spec_;
    int index_;
    std::set<std::string> used_;
};

}  // namespace gputrain::nn
