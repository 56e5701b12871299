// Strategy: how many replicas, on what, and how the global batch is split.
// Decided once from the config, the command line and the devices found; it
// then builds the replicas (backend + communicator each).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "device/devices.hpp"
#include "dist/process_group.hpp"
#include "train/replica.hpp"

namespace gputrain::train {

struct StrategyChoice {
    std::string device = "auto";  // --device: auto | cpu | gpu
    int64_t replicas = 0;         // --replicas (0 = from the config)
    // multi_worker_mirrored under an MPI launcher: the worker processes (must
    // outlive the replicas). Null: this process is the only worker.
    dist::ProcessGroup* processes = nullptr;
};

// The GPUs of `gpus` that the process with local rank `local_rank` of
// `local_size` processes on this machine drives: an even, contiguous split,
// so `mpirun -np 8` on an 8-GPU machine gives each process one GPU. With fewer
// visible GPUs than processes the launcher has pinned them: all are used.
std::vector<int> gpus_for_local_process(const std::vector<int>& gpus, int local_rank, int local_size);

class Strategy {
public:
    // Throws ConfigError when the request cannot be met (e.g. --device gpu
    // without a GPU, a GPU index that does not exist, NCCL with two replicas on one GPU).
    Strategy(const config::RunConfig& cfg, const device::Discovery& found, const StrategyChoice& choice);

    // The replicas of this process.
    int replicas() const { return static_cast<int>(placement_.size()); }
    // The worker processes (1 without a process group) and the replicas of all of them.
    int workers() const { return processes_ ? processes_->size() : 1; }
    int global_replicas() const { return replicas() * workers(); }
    bool on_gpu() const { return on_gpu_; }
    // GPU index of each replica (empty on the CPU).
    const std::vector<int>& placement() const { return placement_; }
    // What joins GPU replicas (nccl or device); none on the CPU and for one GPU replica alone.
    std::optional<config::CommunicatorKind> communicator() const { return communicator_; }
    // "mirrored: 2 replicas (GPU 0,1; nccl), global batch 256 = 128 per replica";
    // "multi_worker_mirrored: 2 workers x 1 replica = 2 replicas (CPU), global batch 32 = 16 per replica"
    std::string describe(int64_t global_batch) const;
    // Why the CPU is used although GPUs were not ruled out, else "".
    const std::string& fallback_note() const { return fallback_note_; }

    // `checkpoint` (may be ""): the file that will be read into them, whose
    // contents the host holds while they load (counted by the memory check).
    std::vector<std::unique_ptr<Replica>> make_replicas(const config::RunConfig& cfg, int64_t global_batch,
                                                        const std::string& checkpoint = "",
                                                        ReplicaUse use = ReplicaUse::training) const;

private:
    void place_on_gpus(const config::RunConfig& cfg, const device::Discovery& found, bool explicit_request);

    config::StrategyType type_;
    bool on_gpu_ = false;
    std::vector<int> placement_;   // CPU: one entry per replica, -1
    std::optional<config::CommunicatorKind> communicator_;  // never automatic
    int cpu_cores_ = 1;
    std::string auto_note_;  // "auto: 2 cores" when strategy.replicas chose the CPU replica count
    dist::ProcessGroup* processes_ = nullptr;
    std::string fallback_note_;
};

}  // namespace gputrain::train
