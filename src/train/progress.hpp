// Progress: what rank 0 shows while training. On a terminal, a Keras-like bar
// redrawn in place ("1875/1875 [=====] 4s 2ms/step - loss: 0.4981 - accuracy: 0.8253");
// otherwise one plain line per epoch. "none" prints only the epoch summaries' absence.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "config/run_config.hpp"

namespace gputrain::train {

enum class ProgressMode { bar, lines, none };

// logging.progress; auto -> bar when `out` is a terminal, else lines.
ProgressMode progress_mode(config::ProgressStyle setting, std::FILE* out, bool quiet);

using MetricList = std::vector<std::pair<std::string, double>>;

class Progress {
public:
    Progress(ProgressMode mode, std::FILE* out) : mode_(mode), out_(out) {}

    // `first_step`: where an epoch resumed in the middle starts (0 otherwise);
    // the time per step and the ETA count only the steps this run trains.
    void begin_epoch(int64_t epoch, int64_t epochs, int64_t steps, int64_t first_step = 0);
    void update(int64_t steps_done, const MetricList& metrics);
    void end_epoch(const MetricList& metrics, double seconds);
    // The epoch stops early (interrupt, error): end the bar's line so the next message starts on its own.
    void abandon_epoch();

    // "loss: 0.4981 - accuracy: 0.8253"
    static std::string format_metrics(const MetricList& metrics);

private:
    std::string bar(int64_t done) const;

    ProgressMode mode_;
    std::FILE* out_;
    int64_t epoch_ = 0, epochs_ = 0, steps_ = 0, first_step_ = 0;
    std::chrono::steady_clock::time_point start_;
    std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace gputrain::train
