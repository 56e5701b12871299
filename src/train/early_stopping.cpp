#include "train/early_stopping.hpp"

#include <cmath>

namespace gputrain::train {

EarlyStopping::EarlyStopping(const config::EarlyStoppingConfig& cfg, bool has_validation)
    : cfg_(cfg), metric_(MonitoredMetric::resolve(cfg.monitor, cfg.mode, has_validation)) {}

std::string EarlyStopping::adopt(EarlyStoppingState& state) const {
    if (state.of.empty()) return "";
    std::string changed;
    if (state.of != metric_.describe()) changed = "watched " + state.of + ", now " + metric_.describe();
    else if (state.min_delta != cfg_.min_delta)
        changed = "counted with min_delta " + shown_value(state.min_delta) + ", now " + shown_value(cfg_.min_delta);
    else if (state.start_from_epoch != cfg_.start_from_epoch)
        changed = "counted from epoch " + std::to_string(state.start_from_epoch + 1) + ", now from epoch " +
                  std::to_string(cfg_.start_from_epoch + 1) + " (start_from_epoch)";
    if (changed.empty()) return "";
    state = EarlyStoppingState{};
    return "early stopping " + changed + ": its count of epochs without improvement starts over";
}

bool EarlyStopping::valid_of(const std::string& of) {
    for (const char* name : {"loss", "accuracy", "val_loss", "val_accuracy", "mae", "val_mae", "mse", "val_mse"})
        for (const char* direction : {" min", " max"})
            if (of == std::string(name) + direction) return true;
    return false;
}

bool EarlyStopping::after_epoch(EarlyStoppingState& state, const EpochRecord& record) const {
    if (!cfg_.enabled || record.epoch <= cfg_.start_from_epoch) return false;
    state.of = metric_.describe();
    state.min_delta = cfg_.min_delta;
    state.start_from_epoch = cfg_.start_from_epoch;
    const double value = metric_.value_of(record);
    if (state.offer(value, record.epoch, metric_.beats(value, state.best, cfg_.min_delta))) return false;
    ++state.wait;
    return stops(state, record.epoch);
}

bool EarlyStopping::stops(const EarlyStoppingState& state, int64_t epochs_done) const {
    // As Keras: never after the first epoch.
    return cfg_.enabled && epochs_done > 1 && state.wait > 0 && state.wait >= cfg_.patience;
}

std::string EarlyStopping::reason(const EarlyStoppingState& state) const {
    return metric_.no_improvement(state, cfg_.min_delta) + " (early_stopping.patience: " +
           std::to_string(cfg_.patience) + ")";
}

std::vector<std::string> EarlyStoppingCallback::restore(const MetadataReader& metadata) {
    state_ = EarlyStoppingState{};
    if (!metadata.has_watched("early_stopping_")) return {};
    for (const char* key : {"early_stopping_min_delta", "early_stopping_start_from_epoch"})
        if (!metadata.has(key)) throw metadata.damaged(std::string("'early_stopping_of' comes without '") + key + "'");
    metadata.watched("early_stopping_", state_);
    state_.min_delta = metadata.real("early_stopping_min_delta", 0.0);
    state_.start_from_epoch = metadata.whole("early_stopping_start_from_epoch");
    // Early stopping goes on counting where the resumed run was; off, its
    // count would be stale by the next resume that turns it on.
    if (!rule_.enabled()) {
        state_ = EarlyStoppingState{};
        return {};
    }
    const std::string restarted = rule_.adopt(state_);
    return restarted.empty() ? std::vector<std::string>{} : std::vector<std::string>{restarted};
}

void EarlyStoppingCallback::after_epoch(const EpochRecord& record, EpochDecision& decision) {
    if (rule_.after_epoch(state_, record)) decision.stop = true;
}

void EarlyStoppingCallback::save(Metadata& metadata) const {
    if (state_.of.empty()) return;
    write_watched(metadata, "early_stopping_", state_);
    metadata["early_stopping_min_delta"] = metadata_number(state_.min_delta);
    metadata["early_stopping_start_from_epoch"] = std::to_string(state_.start_from_epoch);
}

}  // namespace gputrain::train
