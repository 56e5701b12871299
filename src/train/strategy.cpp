#include "train/strategy.hpp"

#include <algorithm>

#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"
#include "data/loader.hpp"
#include "dist/local_communicator.hpp"

namespace gputrain::train {

Strategy::Strategy(const config::RunConfig& cfg, const device::Discovery& found, const StrategyChoice& choice)
    : type_(cfg.strategy.type), cpu_cores_(std::max(1, found.cpu.logical_cores)) {
    const bool want_cpu = choice.device == "cpu" || cfg.strategy.devices == "cpu";
    if (choice.device == "gpu" || (!want_cpu && cfg.strategy.devices != "all" && cfg.strategy.devices != "cpu")) {
        // The CUDA backend arrives with the next release; say what is missing instead of pretending.
        const std::string why = found.gpus.empty() ? found.driver_message
                                                   : "this build of gputrain trains on the CPU only (the CUDA "
                                                     "backend is not built in yet)";
        throw ConfigError("--device gpu / strategy.devices: cannot train on a GPU: " + why +
                          "; use --device cpu or strategy.devices: cpu");
    }
    if (!want_cpu)
        fallback_note_ = found.gpus.empty() ? found.driver_message + "; training on the CPU"
                                            : "this build trains on the CPU only; training on the CPU";
    int64_t n = choice.replicas > 0 ? choice.replicas : cfg.strategy.replicas;
    if (n <= 0) n = 1;
    if (type_ == "one_device" && n > 1)
        throw ConfigError("strategy.type: one_device runs exactly one replica, but " + std::to_string(n) +
                          " were asked for; use strategy.type: mirrored");
    replicas_ = static_cast<int>(n);
}

std::string Strategy::describe(int64_t global_batch) const {
    const auto offsets = data::shard_offsets(global_batch, replicas_);
    std::string line = type_ + ": " + std::to_string(replicas_) + (replicas_ == 1 ? " replica" : " replicas") +
                       " (CPU" + (replicas_ == 1 ? "" : " threads") + "), global batch " +
                       std::to_string(global_batch);
    if (replicas_ == 1) return line + " on one replica";
    const int64_t first = offsets[1] - offsets[0], last = offsets[replicas_] - offsets[replicas_ - 1];
    if (first == last) return line + " = " + std::to_string(first) + " per replica";
    line += " = ";
    for (int r = 0; r < replicas_; ++r) line += (r ? "+" : "") + std::to_string(offsets[r + 1] - offsets[r]);
    return line + " per replica";
}

std::vector<std::unique_ptr<Replica>> Strategy::make_replicas(const config::RunConfig& cfg,
                                                              int64_t global_batch) const {
    // Replica threads share the cores; BLAS threads beyond that only contend.
    set_cpu_blas_threads(1);
    const auto offsets = data::shard_offsets(global_batch, replicas_);
    const int64_t max_rows = offsets[1] - offsets[0];  // the first shard is the largest
    auto comms = dist::make_local_communicators(replicas_);
    std::vector<std::unique_ptr<Replica>> out;
    for (int r = 0; r < replicas_; ++r)
        out.push_back(std::make_unique<Replica>(cfg, std::make_unique<CpuBackend>(), std::move(comms[r]), max_rows));
    return out;
}

}  // namespace gputrain::train
