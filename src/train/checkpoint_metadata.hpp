// A checkpoint's metadata (safetensors' "__metadata__": text keys and values)
// as the trainer and its callbacks read and write it. Reading checks each
// value and names the file and key when one cannot be right.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/error.hpp"
#include "train/monitored_metric.hpp"

namespace gputrain::train {

using Metadata = std::map<std::string, std::string>;

// "%.17g": a double that reads back exactly.
std::string metadata_number(double value);

class MetadataReader {
public:
    // `epochs_done`: the checkpoint's epoch, which counts in callbacks' metadata are checked against.
    MetadataReader(const Metadata& metadata, std::string path, int64_t epochs_done = 0)
        : metadata_(metadata), path_(std::move(path)), epochs_done_(epochs_done) {}

    const std::string& path() const { return path_; }
    int64_t epochs_done() const { return epochs_done_; }
    bool has(const std::string& key) const { return metadata_.count(key) > 0; }
    const std::string* find(const std::string& key) const;
    const Metadata& all() const { return metadata_; }

    // A whole number >= 0 (epochs, steps): all of the text, no sign. Required.
    int64_t whole(const std::string& key) const;
    // An optional number (`fallback` when absent). `finite`: NaN and
    // infinities are damage (sums); else they are values (a best loss may be NaN).
    double real(const std::string& key, double fallback, bool finite = true) const;
    // "PATH: metadata PROBLEM; the file is damaged: resume from another checkpoint"
    DataError damaged(const std::string& problem) const;

    // Whether a callback's keys under `prefix` are there: `prefix`of names
    // what it watched, and any other key with the prefix without it is damage.
    bool has_watched(const std::string& prefix) const;
    // What a callback that watches a metric keeps under `prefix`
    // ("early_stopping_"): _of, _wait, _best and _best_epoch, checked against
    // the epochs done. Every key with the prefix needs _of.
    void watched(const std::string& prefix, WatchedBest& into) const;

private:
    const Metadata& metadata_;
    std::string path_;
    int64_t epochs_done_;
};

void write_watched(Metadata& metadata, const std::string& prefix, const WatchedBest& watched);

}  // namespace gputrain::train
