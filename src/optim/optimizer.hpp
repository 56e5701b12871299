// Optimizer: one fused update over the model's flat parameter buffer. Its
// state (moments, velocity) lives in flat buffers on the same backend, with one
// named slot per buffer for checkpoints ("adam_m", "adam_v", "velocity").
#pragma once

#include <memory>
#include <string>
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
    // Applies one update with the given learning rate; `step` counts updates from 1.
    virtual void step(float* params, const float* grads, double learning_rate, int64_t step) = 0;
    virtual std::vector<StateSlot> state() = 0;
};

// Throws ConfigError for an unknown type, listing the known ones.
std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count);

const std::vector<std::string>& optimizer_names();

}  // namespace gputrain::optim
