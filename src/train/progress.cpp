#include "train/progress.hpp"

#include <unistd.h>

#include <cmath>

namespace gputrain::train {

ProgressMode progress_mode(config::ProgressStyle setting, std::FILE* out, bool quiet) {
    if (quiet) return ProgressMode::none;
    switch (setting) {
        case config::ProgressStyle::none: return ProgressMode::none;
        case config::ProgressStyle::bar: return ProgressMode::bar;
        case config::ProgressStyle::lines: return ProgressMode::lines;
        case config::ProgressStyle::automatic: break;
    }
    return isatty(fileno(out)) ? ProgressMode::bar : ProgressMode::lines;
}

std::string Progress::format_metrics(const MetricList& metrics) {
    std::string s;
    char buf[64];
    for (const auto& [name, value] : metrics) {
        std::snprintf(buf, sizeof buf, "%s: %.4f", name.c_str(), value);
        if (!s.empty()) s += " - ";
        s += buf;
    }
    return s;
}

void Progress::begin_epoch(int64_t epoch, int64_t epochs, int64_t steps, int64_t first_step) {
    epoch_ = epoch;
    epochs_ = epochs;
    steps_ = steps;
    first_step_ = first_step;
    start_ = last_draw_ = std::chrono::steady_clock::now();
    if (mode_ == ProgressMode::bar) std::fprintf(out_, "Epoch %lld/%lld\n", (long long)epoch + 1, (long long)epochs);
}

std::string Progress::bar(int64_t done) const {
    constexpr int width = 30;
    const int filled = steps_ > 0 ? static_cast<int>(width * done / steps_) : width;
    std::string b(static_cast<size_t>(width), '.');
    for (int i = 0; i < filled; ++i) b[static_cast<size_t>(i)] = '=';
    if (filled < width && filled > 0) b[static_cast<size_t>(filled - 1)] = '>';
    const int digits = static_cast<int>(std::to_string(steps_).size());
    char head[64];
    std::snprintf(head, sizeof head, "%*lld/%lld [", digits, (long long)done, (long long)steps_);
    return head + b + "]";
}

void Progress::update(int64_t steps_done, const MetricList& metrics) {
    if (mode_ != ProgressMode::bar) return;
    const auto now = std::chrono::steady_clock::now();
    // Redraw at most ~20 times a second: a terminal is slower than a training step.
    if (steps_done < steps_ && now - last_draw_ < std::chrono::milliseconds(50)) return;
    last_draw_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const int64_t run = steps_done - first_step_;  // steps this run has trained
    const double eta = run > 0 ? elapsed / static_cast<double>(run) * static_cast<double>(steps_ - steps_done) : 0.0;
    std::fprintf(out_, "\r%s - ETA: %.0fs - %s\033[K", bar(steps_done).c_str(), eta, format_metrics(metrics).c_str());
    std::fflush(out_);
}

void Progress::abandon_epoch() {
    if (mode_ == ProgressMode::bar) std::fputc('\n', out_);
    std::fflush(out_);
}

void Progress::end_epoch(const MetricList& metrics, double seconds) {
    const int64_t run = steps_ - first_step_;  // an epoch resumed in the middle: the steps this run trained
    const double ms_per_step = run > 0 ? seconds * 1000.0 / static_cast<double>(run) : 0.0;
    char timing[64];
    std::snprintf(timing, sizeof timing, "%.0fs %.0fms/step", std::round(seconds), std::round(ms_per_step));
    if (ms_per_step < 1.0) std::snprintf(timing, sizeof timing, "%.0fs %.0fus/step", std::round(seconds), ms_per_step * 1000.0);
    if (mode_ == ProgressMode::bar) {
        std::fprintf(out_, "\r%s %s - %s\033[K\n", bar(steps_).c_str(), timing, format_metrics(metrics).c_str());
    } else if (mode_ == ProgressMode::lines) {
        const std::string resumed =
            first_step_ > 0 ? " (from step " + std::to_string(first_step_ + 1) + ")" : std::string();
        std::fprintf(out_, "Epoch %lld/%lld - %lld steps%s - %.2fs %s - %s\n", (long long)epoch_ + 1,
                     (long long)epochs_, (long long)steps_, resumed.c_str(), seconds,
                     timing + std::string(timing).find(' ') + 1, format_metrics(metrics).c_str());
    }
    std::fflush(out_);
}

}  // namespace gputrain::train
