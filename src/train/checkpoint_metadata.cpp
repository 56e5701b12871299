#include "train/checkpoint_metadata.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "train/early_stopping.hpp"

namespace gputrain::train {

std::string metadata_number(double value) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    return buf;
}

const std::string* MetadataReader::find(const std::string& key) const {
    const auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
}

int64_t MetadataReader::whole(const std::string& key) const {
    const std::string* text = find(key);
    if (!text) throw DataError(path_ + ": metadata has no '" + key + "'; not a gputrain checkpoint?");
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (text->empty() || error != std::errc() || end != text->data() + text->size() || value < 0)
        throw DataError(path_ + ": metadata '" + key + "' is not a whole number >= 0: '" + *text +
                        "'; the file is damaged or not a gputrain checkpoint");
    return value;
}

double MetadataReader::real(const std::string& key, double fallback, bool finite) const {
    const std::string* text = find(key);
    if (!text) return fallback;
    size_t used = 0;
    double value = 0;
    try {
        value = std::stod(*text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text->size() || (finite && !std::isfinite(value)))
        throw DataError(path_ + ": metadata '" + key + "' is not a" + (finite ? " finite" : "") + " number: '" + *text +
                        "'; the file is damaged or not a gputrain checkpoint");
    return value;
}

DataError MetadataReader::damaged(const std::string& problem) const {
    return DataError(path_ + ": metadata " + problem + "; the file is damaged: resume from another checkpoint");
}

bool MetadataReader::has_watched(const std::string& prefix) const {
    const std::string of = prefix + "of";
    if (has(of)) return true;
    for (const auto& [key, value] : metadata_)
        if (key.rfind(prefix, 0) == 0) throw damaged("'" + key + "' comes without '" + of + "'");
    return false;
}

void MetadataReader::watched(const std::string& prefix, WatchedBest& w) const {
    const std::string of = prefix + "of", wait = prefix + "wait", best = prefix + "best",
                      best_epoch = prefix + "best_epoch";
    w.of = metadata_.at(of);
    if (!EarlyStopping::valid_of(w.of))
        throw damaged("'" + of + "' is not a monitored metric and direction such as 'val_loss min'");
    w.wait = whole(wait);
    const bool has_best = has(best);
    if (has_best != has(best_epoch))
        throw damaged("'" + best + "' and '" + best_epoch + "' come only together, not one alone");
    if (has_best) {
        w.best = real(best, 0.0, /*finite=*/false);
        w.best_epoch = whole(best_epoch);
        w.has_best = !std::isnan(w.best);
    }
    // The best is one of the epochs done, and every epoch since it counts.
    const std::string epochs = " (epoch " + std::to_string(epochs_done_) + ")";
    if (has_best && (w.best_epoch < 1 || w.best_epoch > epochs_done_))
        throw damaged("'" + best_epoch + "' (" + std::to_string(w.best_epoch) + ") is not an epoch done" + epochs);
    if (w.wait > (has_best ? epochs_done_ - w.best_epoch : epochs_done_))
        throw damaged("'" + wait + "' (" + std::to_string(w.wait) + ") counts more epochs than " +
                      (has_best ? "followed the best one (" + std::to_string(w.best_epoch) + ")"
                                : std::string("were done")) +
                      epochs);
}

void write_watched(Metadata& metadata, const std::string& prefix, const WatchedBest& w) {
    metadata[prefix + "of"] = w.of;
    metadata[prefix + "wait"] = std::to_string(w.wait);
    if (!w.has_best) return;
    metadata[prefix + "best"] = metadata_number(w.best);
    metadata[prefix + "best_epoch"] = std::to_string(w.best_epoch);
}

}  // namespace gputrain::train
