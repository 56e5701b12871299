#include "optim/schedule.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace gputrain::optim {

double steps_before_epoch(const EpochStepsHistory& history, int64_t epoch) {
    double steps = 0;
    for (size_t i = 0; i < history.size() && history[i].from_epoch < epoch; ++i) {
        const int64_t until = i + 1 < history.size() ? std::min(epoch, history[i + 1].from_epoch) : epoch;
        steps += static_cast<double>(until - history[i].from_epoch) * static_cast<double>(history[i].steps);
    }
    return steps;
}

EpochStepsHistory continued_at(EpochStepsHistory history, int64_t epoch, int64_t steps) {
    std::erase_if(history, [&](const EpochSteps& e) { return e.from_epoch >= epoch; });
    if (history.empty() || history.back().steps != steps) history.push_back({epoch, steps});
    return history;
}

std::string format_epoch_steps(const EpochStepsHistory& history) {
    std::string text;
    for (const EpochSteps& e : history) {
        if (!text.empty()) text += ',';
        text += std::to_string(e.from_epoch);
        text += ':';
        text += std::to_string(e.steps);
    }
    return text;
}

std::string parse_epoch_steps(const std::string& text, EpochStepsHistory& out) {
    out.clear();
    const auto whole = [](std::string_view part, int64_t& value) {
        const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
        return !part.empty() && error == std::errc() && end == part.data() + part.size();
    };
    size_t begin = 0;
    while (begin <= text.size()) {
        size_t comma = text.find(',', begin);
        if (comma == std::string::npos) comma = text.size();
        const std::string_view entry(text.data() + begin, comma - begin);
        const size_t colon = entry.find(':');
        EpochSteps e{};
        if (colon == std::string_view::npos || !whole(entry.substr(0, colon), e.from_epoch) ||
            !whole(entry.substr(colon + 1), e.steps))
            return "entry '" + std::string(entry) + "' is not EPOCH:STEPS";
        if (e.steps < 1) return "entry '" + std::string(entry) + "' has fewer than 1 step";
        if (out.empty() ? e.from_epoch != 0 : e.from_epoch <= out.back().from_epoch)
            return "entry '" + std::string(entry) + "' is out of order (epochs rise from 0)";
        out.push_back(e);
        begin = comma + 1;
    }
    return "";
}

Schedule::Schedule(const config::OptimizerConfig& cfg, int64_t steps_per_epoch, int64_t total_epochs,
                   const EpochStepsHistory& history)
    : cfg_(cfg.schedule),
      base_(cfg.learning_rate),
      steps_per_epoch_(std::max<int64_t>(1, steps_per_epoch)),
      total_steps_(static_cast<double>(steps_per_epoch_) * static_cast<double>(std::max<int64_t>(1, total_epochs))),
      warmup_steps_(cfg.schedule.warmup_steps > 0
                        ? static_cast<double>(cfg.schedule.warmup_steps)
                        : static_cast<double>(cfg.schedule.warmup_epochs) * static_cast<double>(steps_per_epoch_)),
      decay_start_(cfg.schedule.warmup_steps > 0 || history.empty()
                       ? warmup_steps_
                       : steps_before_epoch(history, cfg.schedule.warmup_epochs)) {}

namespace {
// One of OneCycleLR's cosine phases: `pct` of the way from `from` to `to`.
double anneal(double from, double to, double pct) { return to + (from - to) / 2.0 * (std::cos(M_PI * pct) + 1.0); }
}  // namespace

double Schedule::momentum(int64_t epoch, int64_t step_in_epoch) const {
    if (cfg_.type != config::ScheduleType::one_cycle || !cfg_.cycle_momentum) return -1.0;
    const double position = static_cast<double>(epoch) * static_cast<double>(steps_per_epoch_) +
                            static_cast<double>(step_in_epoch);
    const double end1 = cfg_.pct_start * total_steps_ - 1.0, end2 = total_steps_ - 1.0;
    if (position <= end1) return anneal(cfg_.max_momentum, cfg_.base_momentum, end1 > 0 ? position / end1 : 1.0);
    return anneal(cfg_.base_momentum, cfg_.max_momentum,
                  end2 > end1 ? std::min(1.0, (position - end1) / (end2 - end1)) : 1.0);
}

double Schedule::learning_rate(int64_t global_step, int64_t epoch, int64_t step_in_epoch) const {
    // Where the step is, in steps of this run's epochs.
    const double position = static_cast<double>(epoch) * static_cast<double>(steps_per_epoch_) +
                            static_cast<double>(step_in_epoch);
    if (epoch < cfg_.warmup_epochs) return base_ * (position + 1.0) / warmup_steps_;
    // warmup_steps: the first optimizer steps of the training, whatever the epochs.
    if (static_cast<double>(global_step) < static_cast<double>(cfg_.warmup_steps))
        return base_ * (static_cast<double>(global_step) + 1.0) / warmup_steps_;
    switch (cfg_.type) {
        case config::ScheduleType::constant: break;
        case config::ScheduleType::step_decay: {
            const int64_t decays = (epoch - cfg_.warmup_epochs) / std::max<int64_t>(1, cfg_.decay_epochs);
            return base_ * std::pow(cfg_.decay_rate, static_cast<double>(decays));
        }
        case config::ScheduleType::exponential_decay: {
            // Optimizer steps since warmup ended, whatever batch each epoch had.
            double p = std::max(0.0, static_cast<double>(global_step) - decay_start_) /
                       static_cast<double>(std::max<int64_t>(1, cfg_.decay_steps));
            if (cfg_.staircase) p = std::floor(p);
            return base_ * std::pow(cfg_.decay_rate, p);
        }
        case config::ScheduleType::cosine: {
            const double span = std::max(1.0, total_steps_ - warmup_steps_);
            const double progress = std::min(1.0, (position - warmup_steps_) / span);
            return cfg_.min_lr + (base_ - cfg_.min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
        }
        case config::ScheduleType::linear: {
            const double span = std::max(1.0, total_steps_ - warmup_steps_);
            const double progress = std::min(1.0, (position - warmup_steps_) / span);
            return base_ + (cfg_.min_lr - base_) * progress;
        }
        case config::ScheduleType::one_cycle: {
            // PyTorch's OneCycleLR (two phases, cosine annealing): from
            // max_lr / div_factor up to max_lr until step pct_start * T - 1,
            // then down to min_lr at step T - 1, T the run's optimizer steps.
            const double top = cfg_.max_lr > 0 ? cfg_.max_lr : base_;
            const double initial = top / cfg_.div_factor;
            const double floor = cfg_.min_lr_given ? cfg_.min_lr : initial / cfg_.final_div_factor;
            const double end1 = cfg_.pct_start * total_steps_ - 1.0, end2 = total_steps_ - 1.0;
            if (position <= end1) return anneal(initial, top, end1 > 0 ? position / end1 : 1.0);
            return anneal(top, floor, end2 > end1 ? std::min(1.0, (position - end1) / (end2 - end1)) : 1.0);
        }
    }
    return base_;
}

}  // namespace gputrain::optim
