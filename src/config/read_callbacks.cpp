// The sections of Keras' callbacks: early_stopping and reduce_lr_on_plateau.
// Each is on when the config has it: a mapping of its keys, or true/false
// alone (--set early_stopping=false turns off a config's).
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "config/read_sections.hpp"
#include "config/scalar_text.hpp"

namespace gputrain::config {

namespace {

// A Keras argument with no key here, and what to do instead.
struct NotAKey {
    const char* key;
    const char* problem;
    const char* hint;
};

// The section `key` of `top`: nullopt when it is off (absent, or false), else
// the section to read its keys from (empty for `true`). `example` shows its
// keys in messages; an empty section (keys commented out, more likely than a
// wish for every default) is an error that names `defaults`.
std::optional<Section> callback_section(const Section& top, const std::string& key, const std::string& example,
                                        const std::string& defaults, const std::string& off_means,
                                        const std::vector<NotAKey>& not_keys) {
    if (!top.has(key)) return std::nullopt;
    const ValueRef v = top.value(key);
    const std::string hint = "e.g. " + key + ": " + example;
    if (v.node.IsScalar()) {
        const auto on = parse_bool(v.node.Scalar());
        if (!on) v.fail("expected its keys or true/false, got " + describe(v.node), hint);
        if (!*on) return std::nullopt;
        return Section(top.source(), YAML::Node(), key, top.key_place(key), keys_of(key));  // the defaults
    }
    if (v.node.IsSequence()) v.fail("expected its keys or true/false, got a list", hint);
    if (v.node.IsNull())
        v.fail("is empty", "give its keys, " + hint + ", or true for " + defaults + "; remove it to " + off_means);
    if (v.node.IsMap())
        for (const auto& pair : v.node) {
            if (!pair.first.IsScalar()) continue;  // Section names the problem
            const std::string name = pair.first.Scalar(), path = key + "." + name;
            for (const auto& n : not_keys)
                if (name == n.key) v.source->fail(v.source->place(pair.first.Mark(), path), path, n.problem, n.hint);
        }
    return top.child(key);
}

}  // namespace

EarlyStoppingConfig read_early_stopping(const Section& top) {
    EarlyStoppingConfig e;
    const auto s = callback_section(
        top, "early_stopping", "{patience: 3}", "Keras' defaults (patience 0)", "train every epoch",
        {{"restore_best_weights",
          "is not a key here: best.safetensors keeps the best epoch's weights by checkpoint.monitor, and evaluate "
          "scores it",
          "remove it, and set checkpoint.monitor to early_stopping.monitor's metric"},
         {"baseline", "is not supported yet", "remove it; min_delta and patience apply from the first epoch watched"}});
    if (!s) return e;
    e.enabled = true;
    e.monitor = s->choice("monitor", e.monitor);
    e.patience = s->count("patience", e.patience);
    e.min_delta = s->number("min_delta", e.min_delta, NumberRange::non_negative);
    e.mode = s->choice("mode", e.mode);
    e.start_from_epoch = s->count("start_from_epoch", e.start_from_epoch);
    return e;
}

ReduceLrOnPlateauConfig read_reduce_lr_on_plateau(const Section& top) {
    ReduceLrOnPlateauConfig p;
    const auto s = callback_section(top, "reduce_lr_on_plateau", "{factor: 0.5, patience: 3}",
                                    "Keras' defaults (factor 0.1, patience 10)", "keep the learning rate", {});
    if (!s) return p;
    p.enabled = true;
    p.monitor = s->choice("monitor", p.monitor);
    p.factor = s->number("factor", p.factor, NumberRange::non_negative);
    // In (0, 1) as the optimizer's float32 sees it: a cut that changes the rate and leaves it above 0.
    if (!(static_cast<float>(p.factor) < 1.0f))
        s->value("factor").fail("must be below 1 in float32 (at most 0.9999999): each cut multiplies the rate by it",
                                "e.g. factor: 0.1");
    if (!(static_cast<float>(p.factor) >= std::numeric_limits<float>::min()))
        s->value("factor").fail("must be at least 1.2e-38 (float32's smallest normal number): the rate would become 0",
                                "e.g. factor: 0.1");
    p.patience = s->count("patience", p.patience);
    p.min_delta = s->number("min_delta", p.min_delta, NumberRange::non_negative);
    p.cooldown = s->count("cooldown", p.cooldown);
    p.min_lr = s->number("min_lr", p.min_lr, NumberRange::non_negative);
    p.mode = s->choice("mode", p.mode);
    return p;
}

}  // namespace gputrain::config
