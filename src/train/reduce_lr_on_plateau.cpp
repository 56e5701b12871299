#include "train/reduce_lr_on_plateau.hpp"

#include <algorithm>
#include <cmath>

namespace gputrain::train {

ReduceLrOnPlateau::ReduceLrOnPlateau(const config::ReduceLrOnPlateauConfig& cfg, bool has_validation, double base_rate)
    : cfg_(cfg), metric_(MonitoredMetric::resolve(cfg.monitor, cfg.mode, has_validation)), base_rate_(base_rate) {}

double ReduceLrOnPlateau::learning_rate(const PlateauState& state) const {
    return cfg_.enabled && state.learning_rate > 0 ? state.learning_rate : base_rate_;
}

std::string ReduceLrOnPlateau::adopt(PlateauState& state) const {
    if (state.of.empty()) return "";
    if (!cfg_.enabled) {
        const bool reduced = state.learning_rate > 0 && state.learning_rate != base_rate_;
        state = PlateauState{};
        return reduced ? "reduce_lr_on_plateau is off: the learning rate is optimizer.learning_rate (" +
                             shown_value(base_rate_) + ") again"
                       : "";
    }
    if (state.of == metric_.describe()) return "";
    const std::string why = "reduce_lr_on_plateau watched " + state.of + ", now " + metric_.describe() +
                            ": its count of epochs without improvement starts over (the learning rate stays " +
                            shown_value(learning_rate(state)) + ")";
    const double rate = state.learning_rate;
    state = PlateauState{};
    state.learning_rate = rate;
    return why;
}

std::string ReduceLrOnPlateau::after_epoch(PlateauState& state, const EpochRecord& record) const {
    if (!cfg_.enabled) return "";
    state.of = metric_.describe();
    if (state.cooldown_left > 0) {
        --state.cooldown_left;
        state.wait = 0;
    }
    const double value = metric_.value_of(record);
    if (state.offer(value, record.epoch, metric_.beats_moved_best(value, state.best, cfg_.min_delta))) return "";
    if (state.cooldown_left > 0) return "";
    if (++state.wait < cfg_.patience) return "";
    const double old_rate = learning_rate(state);
    // As Keras: nothing once the rate is at min_lr (compared in float32, the optimizer's precision).
    if (!(static_cast<float>(old_rate) > static_cast<float>(cfg_.min_lr))) return "";
    const std::string why = metric_.no_improvement(state, cfg_.min_delta);
    state.learning_rate = std::max(old_rate * cfg_.factor, cfg_.min_lr);
    state.cooldown_left = cfg_.cooldown;
    state.wait = 0;
    return why + " (reduce_lr_on_plateau.patience: " + std::to_string(cfg_.patience) + "); learning rate " +
           shown_value(old_rate) + " -> " + shown_value(state.learning_rate);
}

std::vector<std::string> ReduceLrCallback::restore(const MetadataReader& metadata) {
    state_ = PlateauState{};
    if (!metadata.has_watched("reduce_lr_")) return {};
    metadata.watched("reduce_lr_", state_);
    state_.cooldown_left = metadata.whole("reduce_lr_cooldown_left");
    state_.learning_rate = metadata.real("reduce_lr_learning_rate", 0.0);
    if (metadata.has("reduce_lr_learning_rate") && !(static_cast<float>(state_.learning_rate) > 0))
        throw metadata.damaged("'reduce_lr_learning_rate' (" + metadata_number(state_.learning_rate) +
                               ") is not a rate above 0");
    std::vector<std::string> notes;
    if (std::string changed = rule_.adopt(state_); !changed.empty()) notes.push_back(std::move(changed));
    // A rate the rule has cut stands, whatever optimizer.learning_rate says now.
    if (rule_.enabled() && state_.learning_rate > 0)
        notes.push_back("Learning rate " + shown_value(state_.learning_rate) +
                        ", as reduce_lr_on_plateau set it (optimizer.learning_rate, " + shown_value(rule_.base_rate()) +
                        ", applies only until its first cut)");
    return notes;
}

void ReduceLrCallback::after_epoch(const EpochRecord& record, EpochDecision& decision) {
    const std::string lowered = rule_.after_epoch(state_, record);
    if (lowered.empty()) return;
    decision.learning_rate = learning_rate();
    decision.notes.push_back("reduce_lr_on_plateau: " + lowered);
}

void ReduceLrCallback::save(Metadata& metadata) const {
    if (state_.of.empty()) return;
    write_watched(metadata, "reduce_lr_", state_);
    metadata["reduce_lr_cooldown_left"] = std::to_string(state_.cooldown_left);
    if (state_.learning_rate > 0) metadata["reduce_lr_learning_rate"] = metadata_number(state_.learning_rate);
}

}  // namespace gputrain::train
