#include "train/early_stopping.hpp"

#include <cmath>
#include <cstdio>

namespace gputrain::train {

EarlyStopping::EarlyStopping(const config::EarlyStoppingConfig& cfg, bool has_validation)
    : cfg_(cfg), metric_(MonitoredMetric::resolve(cfg.monitor, cfg.mode, has_validation)) {}

std::string EarlyStopping::adopt(EarlyStoppingState& state) const {
    if (state.of.empty() || state.of == metric_.describe()) return "";
    const std::string why = "early stopping watched " + state.of + ", now " + metric_.describe() +
                            ": its count of epochs without improvement starts over";
    state = EarlyStoppingState{};
    return why;
}

bool EarlyStopping::after_epoch(EarlyStoppingState& state, const EpochRecord& record) const {
    if (!cfg_.enabled || record.epoch <= cfg_.start_from_epoch) return false;
    state.of = metric_.describe();
    const double value = metric_.value_of(record);
    if (!std::isnan(value) && (!state.has_best || metric_.beats(value, state.best, cfg_.min_delta))) {
        state.has_best = true;
        state.best = value;
        state.best_epoch = record.epoch;
        state.wait = 0;
        return false;
    }
    ++state.wait;
    return stops(state, record.epoch);
}

bool EarlyStopping::stops(const EarlyStoppingState& state, int64_t epochs_done) const {
    // As Keras: never after the first epoch.
    return cfg_.enabled && epochs_done > 1 && state.wait > 0 && state.wait >= cfg_.patience;
}

namespace {

std::string shown(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

}  // namespace

std::string EarlyStopping::reason(const EarlyStoppingState& state) const {
    const std::string epochs = std::to_string(state.wait) + (state.wait == 1 ? " epoch" : " epochs");
    const std::string patience = " (early_stopping.patience: " + std::to_string(cfg_.patience) + ")";
    if (!state.has_best) return metric_.name + " was NaN for " + epochs + patience;
    return metric_.name + " did not improve on " + shown(state.best) + " (epoch " +
           std::to_string(state.best_epoch) + ")" +
           (cfg_.min_delta > 0 ? " by more than " + shown(cfg_.min_delta) : std::string()) + " for " +
           epochs + patience;
}

}  // namespace gputrain::train
