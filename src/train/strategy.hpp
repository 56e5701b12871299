// Strategy: how many replicas, on what, and how the global batch is split.
// Decided once from the config, the command line and the devices found; it
// then builds the replicas (backend + communicator each).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "device/devices.hpp"
#include "train/replica.hpp"

namespace gputrain::train {

struct StrategyChoice {
    std::string device = "auto";  // --device: auto | cpu | gpu
    int64_t replicas = 0;         // --replicas (0 = from the config)
};

class Strategy {
public:
    // Throws ConfigError when the request cannot be met (e.g. --device gpu without a GPU).
    Strategy(const config::RunConfig& cfg, const device::Discovery& found, const StrategyChoice& choice);

    int replicas() const { return replicas_; }
    bool on_gpu() const { return on_gpu_; }
    // "mirrored: 2 replicas (CPU threads), global batch 32 = 16 per replica"
    std::string describe(int64_t global_batch) const;
    // Why the CPU is used, when it is ("no CUDA driver found ...; training on the CPU"), else "".
    const std::string& fallback_note() const { return fallback_note_; }

    std::vector<std::unique_ptr<Replica>> make_replicas(const config::RunConfig& cfg, int64_t global_batch) const;

private:
    std::string type_;
    int replicas_ = 1;
    bool on_gpu_ = false;
    int cpu_cores_ = 1;
    std::string fallback_note_;
};

}  // namespace gputrain::train
