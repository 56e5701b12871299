// Optimizer: one fused update over the model's flat parameter buffer. Its
// state (moments, velocity) lives in flat buffers on the same backend, with one
// named slot per buffer for checkpoints ("adam_m", "adam_v", "velocity").
#pragma once

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
    // optimizer.no_decay: the parameter ranges [offset, offset + count) that
    // take no weight decay (AdamW); the others decay as configured.
    virtual void set_decay_exempt(const std::vector<std::pair<size_t, size_t>>& ranges) { (void)ranges; }
};

// The optimizer of cfg.type.
std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count);

}  // namespace gputrain::optim
