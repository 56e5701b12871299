// Optimizer: one fused update over the model's flat parameter buffer. Its
// state (moments, velocity) lives in flat buffers on the same backend, with one
// named slot per buffer for checkpoints ("adam_m", "adam_v", "velocity").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "config/run_config.hpp"

namespace gputrain::optim {

struct StateSlot {
    std::string name;  // "adam_m"
    float* data;       // param_count floats on the backend
};

class Optimizer {
public:
    virtual ~Optimizer() = default;
    virtual std::string type() const = 0;
    // One update in two parts, so that the kernel's launch can be recorded in
    // a graph and replayed: prepare() writes this update's scalars (from the
    // learning rate and `step`, which counts updates from 1) to the backend,
    // in stream order without waiting; apply() runs the update with the
    // scalars last prepared, or leaves everything as it is when `skip` is not
    // null and *skip != 0 (backend memory: a step whose gradients were not
    // finite, Backend::check_finite).
    virtual void prepare(double learning_rate, int64_t step) = 0;
    virtual void apply(float* params, const float* grads, const int32_t* skip) = 0;
    // Both, unconditionally.
    void step(float* params, const float* grads, double learning_rate, int64_t step) {
        prepare(learning_rate, step);
        apply(params, grads, nullptr);
    }
    virtual std::vector<StateSlot> state() = 0;
    // The momentum of the next prepare() (Adam's beta1, SGD's momentum), as a
    // schedule cycles it (one_cycle's cycle_momentum); negative: the configured one.
    void set_momentum(double momentum) { cycled_momentum_ = momentum; }
    // optimizer.no_decay: the parameter ranges [offset, offset + count) that
    // take no weight decay (AdamW); the others decay as configured.
    void set_decay_exempt(const std::vector<std::pair<size_t, size_t>>& ranges);
    // A layer's lr_multiplier: its parameters' range trains at the learning
    // rate times the multiplier (AdamW's decay too, as a PyTorch parameter
    // group's lr scales both); the others at the rate.
    struct RangeScale {
        size_t offset, count;
        double lr_multiplier;
    };
    void set_lr_multipliers(const std::vector<RangeScale>& ranges);
    // CPU replicas of one process update the weights in slices
    // (train/shared_update.hpp): apply() touches parameters [begin, end) only,
    // with the same arithmetic per element, so the same bits as a whole update.
    void set_shard(size_t begin, size_t end);
    // Uses `owner`'s state (an optimizer of the same configuration and size,
    // on the same host memory) instead of its own, which is freed: the
    // replicas of one process keep one copy, each updating its slice of it.
    void share_state_of(Optimizer& owner);

protected:
    // The parameters in runs that share a kind: (multiplier, whether AdamW's
    // decay applies). Without no_decay and multipliers, one run of all, kind 0
    // = {1, true}. An optimizer prepares one set of scalars per kind and runs
    // its kernel once per run.
    struct Kind {
        double multiplier;
        bool decays;
    };
    struct Run {
        size_t offset, count, kind;
    };
    explicit Optimizer(size_t param_count);
    size_t param_count_;
    double cycled_momentum_ = -1.0;  // set_momentum's; negative: none
    std::vector<Kind> kinds_{{1.0, true}};
    // The runs apply() updates: the plan's, cut to set_shard's slice.
    std::vector<Run> runs_;
    // Called after the runs change (before training): room for kinds_.size() scalar sets.
    virtual void kinds_changed() {}
    // share_state_of: point the state at `slots` (owner's state(), in the same order) and free one's own.
    virtual void adopt_state(const std::vector<StateSlot>& slots) = 0;

private:
    void plan_runs();
    std::vector<Run> plan_;  // every parameter in runs of one kind
    size_t shard_begin_ = 0, shard_end_ = SIZE_MAX;
    std::vector<std::pair<size_t, size_t>> exempt_;
    std::vector<RangeScale> scales_;
};

// The optimizer of cfg.type.
std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count);

}  // namespace gputrain::optim
