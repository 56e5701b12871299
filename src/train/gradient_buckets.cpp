#include "train/gradient_buckets.hpp"

namespace gputrain::train {

std::vector<GradientRange> plan_gradient_buckets(const std::vector<size_t>& layer_offsets, double bucket_mb) {
    std::vector<GradientRange> plan;
    const size_t total = layer_offsets.empty() ? 0 : layer_offsets.back();
    if (total == 0) return plan;
    if (bucket_mb <= 0) return {{0, total}};
    const double bucket_bytes = bucket_mb * 1024.0 * 1024.0;
    size_t end = total;
    for (size_t i = layer_offsets.size() - 1; i-- > 0;) {
        const size_t begin = layer_offsets[i];
        if (begin < end && static_cast<double>(end - begin) * sizeof(float) >= bucket_bytes) {
            plan.push_back({begin, end});
            end = begin;
        }
    }
    if (end > 0) plan.push_back({0, end});
    return plan;
}

GradientBuckets::GradientBuckets(const nn::Model& model, double bucket_mb, dist::Communicator& comm, float* grads)
    : plan_(plan_gradient_buckets(model.layer_param_offsets(), bucket_mb)),
      comm_(comm),
      grads_(grads),
      total_(model.param_count()),
      overlapping_(bucket_mb > 0 && comm.size() > 1) {
    if (overlapping_) on_ready_ = [this](size_t offset) { ready(offset); };
}

void GradientBuckets::ready(size_t offset) {
    // Everything from `offset` on is final: start every bucket that lies in it.
    while (next_ < plan_.size() && plan_[next_].begin >= offset) {
        const GradientRange& b = plan_[next_++];
        pending_.push_back(comm_.allreduce_sum_start(grads_ + b.begin, b.end - b.begin));
    }
}

std::optional<bool> GradientBuckets::finish() {
    if (!overlapping_) {
        comm_.allreduce_sum(grads_, total_);
        return std::nullopt;
    }
    ready(0);  // backward reported every layer; this only guards the plan's invariant
    std::optional<bool> finite = true;
    for (const dist::PendingAllreduce& p : pending_) {
        const std::optional<bool> bucket = comm_.allreduce_wait_finite(p);
        if (!bucket) finite = std::nullopt;
        else if (finite && !*bucket) finite = false;
    }
    pending_.clear();
    next_ = 0;
    return finite;
}

}  // namespace gputrain::train
