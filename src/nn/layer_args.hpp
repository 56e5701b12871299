// LayerArgs: reads a layer's parameters from its LayerSpec, one key at a time;
// every key must be consumed (finish() reports leftovers with "did you mean").
// Errors read "FILE:LINE:COL: model.layers[I] (TYPE): KEY: problem".
// It also keeps each key it read with the value the layer took, in one
// spelling (defaults included, "3,3" for a pair), for the resolved config.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/activation.hpp"
#include "config/run_config.hpp"

namespace gputrain::nn {

// (height, width) of a kernel, stride, pool or dilation.
struct IntPair {
    int64_t h = 1, w = 1;
};

class LayerArgs {
public:
    LayerArgs(const config::LayerSpec& spec, int index) : spec_(spec), index_(index) {}

    int64_t positive_int(const std::string& key);                    // required
    double number(const std::string& key, double fallback, double lo, double hi);  // lo <= x < hi
    bool flag(const std::string& key, bool fallback);
    std::string word(const std::string& key, const std::string& fallback);
    // One of `choices` (e.g. padding: same | valid).
    std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& choices);
    // activation: relu | sigmoid | tanh | gelu | softmax | linear.
    Activation activation(const std::string& key, Activation fallback);
    // A positive int `3` (both axes) or a pair `[3, 5]`; required when fallback is empty.
    IntPair int_pair(const std::string& key, std::optional<IntPair> fallback);
    // A required list of integers, e.g. target_shape: [28, 28, 1] (any sign; the layer checks them).
    std::vector<int64_t> int_list(const std::string& key);
    bool has(const std::string& key) const { return spec_.params.count(key) > 0; }

    // Every key read so far, in the order read, with the value taken (given or
    // default) in the text form config/ keeps parameters in: "true", "0.99",
    // "relu", "3,3" (a pair, both axes written), "28,28,1".
    const std::vector<std::pair<std::string, std::string>>& resolved() const { return resolved_; }

    // The keys this layer type takes (the registry sets them before the
    // layer's factory reads any).
    void set_known(std::vector<std::string> known_keys) {
        known_ = std::move(known_keys);
        known_set_ = true;
    }
    // Throws for a key not read, listing the ones this layer type takes.
    void finish() const;

    // Throws ConfigError about `key`. A given key this layer does not take
    // comes first: `{type: dropout, p: 0.2}` is told about `p` (did you mean
    // 'rate'?), not that rate is missing.
    [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
    // "FILE:LINE:COL: " of the layer's entry in the config (or of `key`
    // within it), "" when the spec carries no place.
    std::string place(const std::string& key = "") const;

private:
    const std::string* find(const std::string& key);
    // A required key is absent (a given key the layer does not take, such as
    // its typo, is reported first: see fail()).
    [[noreturn]] void missing(const std::string& key, const std::string& example) const;

    void record(const std::string& key, std::string text) { resolved_.emplace_back(key, std::move(text)); }
    // Throws for the first given key this layer does not take, other than `except`.
    void reject_unknown(const std::string& except = "") const;
    [[noreturn]] void throw_at(const std::string& key, const std::string& problem) const;

    const config::LayerSpec& spec_;
    int index_;
    std::vector<std::string> known_;
    bool known_set_ = false;  // errors raised outside the registry's factory check no keys
    std::set<std::string> used_;
    std::vector<std::pair<std::string, std::string>> resolved_;
};

}  // namespace gputrain::nn
