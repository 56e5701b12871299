#include "optim/optimizer.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "optim/adam.hpp"
#include "optim/rmsprop.hpp"
#include "optim/sgd.hpp"

namespace gputrain::optim {

Optimizer::Optimizer(size_t param_count)
    : param_count_(param_count), runs_{{0, param_count, 0}}, plan_{{0, param_count, 0}} {}

void Optimizer::set_shard(size_t begin, size_t end) {
    shard_begin_ = begin;
    shard_end_ = end;
    plan_runs();
}

void Optimizer::share_state_of(Optimizer& owner) {
    if (owner.type() != type() || owner.param_count_ != param_count_)
        throw Error("internal: sharing the state of a " + owner.type() + " optimizer with a " + type() + " one");
    adopt_state(owner.state());
}

void Optimizer::set_decay_exempt(const std::vector<std::pair<size_t, size_t>>& ranges) {
    exempt_ = ranges;
    plan_runs();
}

void Optimizer::set_lr_multipliers(const std::vector<RangeScale>& ranges) {
    scales_ = ranges;
    plan_runs();
}

void Optimizer::plan_runs() {
    const size_t n = param_count_;
    std::vector<char> exempt(n, 0);
    for (const auto& [offset, count] : exempt_) std::fill_n(exempt.begin() + static_cast<std::ptrdiff_t>(offset), count, 1);
    std::vector<double> multiplier(n, 1.0);
    for (const RangeScale& r : scales_)
        std::fill_n(multiplier.begin() + static_cast<std::ptrdiff_t>(r.offset), r.count, r.lr_multiplier);
    kinds_ = {{1.0, true}};
    plan_.clear();
    const auto kind_of = [&](size_t i) {
        const Kind k{multiplier[i], exempt[i] == 0};
        for (size_t j = 0; j < kinds_.size(); ++j)
            if (kinds_[j].multiplier == k.multiplier && kinds_[j].decays == k.decays) return j;
        kinds_.push_back(k);
        return kinds_.size() - 1;
    };
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && exempt[j] == exempt[i] && multiplier[j] == multiplier[i]) ++j;
        plan_.push_back({i, j - i, kind_of(i)});
        i = j;
    }
    if (plan_.empty()) plan_.push_back({0, 0, 0});
    runs_.clear();
    for (const Run& r : plan_) {
        const size_t begin = std::max(r.offset, shard_begin_), end = std::min(r.offset + r.count, shard_end_);
        if (begin < end) runs_.push_back({begin, end - begin, r.kind});
    }
    kinds_changed();
}

std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count) {
    switch (cfg.type) {
        case config::OptimizerType::sgd: return std::make_unique<Sgd>(cfg, backend, param_count);
        case config::OptimizerType::adam:
        case config::OptimizerType::adamw: return std::make_unique<Adam>(cfg, backend, param_count);
        case config::OptimizerType::rmsprop: return std::make_unique<Rmsprop>(cfg, backend, param_count);
    }
    throw Error("internal: optimizer.type has no optimizer");
}

}  // namespace gputrain::optim
