// SharedUpdate: the CPU replicas of one process update the weights together.
// After the gradient all-reduce every replica holds the same summed gradients
// and the same weights, so running the optimizer once per replica over every
// parameter repeats the same arithmetic N times. Instead, the replicas keep one
// optimizer state (and one EMA), replica 0's, and each updates its slice of the
// parameters (Optimizer::set_shard), then copies the new values of its slice
// into the other replicas' weights; a barrier ends the step, so that no replica
// reads weights before every slice is written. Each element sees the same
// operations as in a whole update: the same bits, on any replica count.
// training.clip_norm too goes by slices: each replica sums the squares of its
// slice, and every one adds the sums in replica order (clip).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

#include "backend/cpu/vector_math.hpp"
#include "backend/ops/optimizers.hpp"
#include "dist/abortable_barrier.hpp"

namespace gputrain::train {

class SharedUpdate {
public:
    // `weights`: each replica's flat parameter buffer (host memory), `count` floats each.
    SharedUpdate(std::vector<float*> weights, size_t count) : weights_(std::move(weights)), barrier_(replicas()) {
        // Slices of whole cache lines (16 floats), so that no two replicas write one line.
        const size_t lines = (count + 15) / 16;
        for (int r = 0; r < replicas(); ++r) {
            const size_t begin = std::min(count, lines * static_cast<size_t>(r) / weights_.size() * 16);
            const size_t end = std::min(count, lines * static_cast<size_t>(r + 1) / weights_.size() * 16);
            slices_.emplace_back(begin, end);
        }
    }

    int replicas() const { return static_cast<int>(weights_.size()); }
    // Replica r's slice [begin, end) of the parameters.
    std::pair<size_t, size_t> slice(int r) const { return slices_[static_cast<size_t>(r)]; }

    // training.clip_norm for replica r: scales its slice of `grads` (the
    // summed gradients, which every replica holds) as the global norm asks,
    // once every replica has added its slice's squares. Returns the norm.
    float clip(int r, float* grads, float max_norm) {
        const auto [begin, end] = slices_[static_cast<size_t>(r)];
        squares_[static_cast<size_t>(r)].value = cpu::sum_of_squares(grads + begin, end - begin);
        barrier_.arrive_and_wait();
        double sum = 0.0;
        for (const Padded& s : squares_) sum += s.value;
        const double norm = std::sqrt(sum);
        const float f = ops::clip_factor(norm, max_norm);
        if (f != 1.0f)
            for (size_t i = begin; i < end; ++i) grads[i] *= f;
        // Nobody writes its sum for the next step before all have read this one's:
        // the publish() barrier between them sees to it.
        return static_cast<float>(norm);
    }

    // Replica r, after updating its slice of its own weights: copies the slice
    // to the others, then waits until every replica has done so.
    void publish(int r) {
        const auto [begin, end] = slices_[static_cast<size_t>(r)];
        const float* mine = weights_[static_cast<size_t>(r)];
        for (size_t other = 0; other < weights_.size(); ++other)
            if (other != static_cast<size_t>(r) && end > begin)
                std::memcpy(weights_[other] + begin, mine + begin, (end - begin) * sizeof(float));
        barrier_.arrive_and_wait();
    }

    // A replica failed: the others stop waiting in publish() (they throw).
    void abort() { barrier_.abort(); }

private:
    std::vector<float*> weights_;
    std::vector<std::pair<size_t, size_t>> slices_;
    struct alignas(64) Padded {
        double value = 0;
    };
    std::vector<Padded> squares_ = std::vector<Padded>(weights_.size());
    dist::AbortableBarrier barrier_;
};

}  // namespace gputrain::train
