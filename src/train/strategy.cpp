#include "train/strategy.hpp"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "data/loader.hpp"
#include "dist/hierarchical_communicator.hpp"
#include "dist/collective_watch.hpp"
#include "dist/local_communicator.hpp"
#include "train/gpu_runtime.hpp"
#include "train/memory_estimate.hpp"

namespace gputrain::train {

namespace {

std::vector<int> parse_gpu_list(const std::string& text) {
    std::vector<int> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) out.push_back(std::stoi(item));
    return out;
}

// Why GPUs cannot be used, or "" when they can.
std::string gpu_unavailable_reason(const device::Discovery& found) {
    if (!gpu_runtime_built()) return "this gputrain was built without CUDA (rebuild with meson -Dcuda=enabled)";
    if (found.gpus.empty()) return found.driver_message;
    return "";
}

}  // namespace

std::vector<int> gpus_for_local_process(const std::vector<int>& gpus, int local_rank, int local_size) {
    const int n = static_cast<int>(gpus.size());
    // Fewer visible GPUs than workers: the launcher gave each worker its own
    // (srun --gpus-per-task, a per-rank CUDA_VISIBLE_DEVICES), so use them all.
    if (local_size <= 1 || n < local_size) return gpus;
    const size_t begin = static_cast<size_t>(n) * local_rank / local_size;
    const size_t end = static_cast<size_t>(n) * (local_rank + 1) / local_size;
    return std::vector<int>(gpus.begin() + static_cast<std::ptrdiff_t>(begin), gpus.begin() + static_cast<std::ptrdiff_t>(end));
}

Strategy::Strategy(const config::RunConfig& cfg, const device::Discovery& found, const StrategyChoice& choice)
    : type_(cfg.strategy.type), cpu_cores_(std::max(1, found.cpu.logical_cores)), processes_(choice.processes) {
    if (processes_ && processes_->size() == 1) processes_ = nullptr;  // one worker: exactly mirrored
    const bool gpu_list = cfg.strategy.devices != "all" && cfg.strategy.devices != "cpu";
    const bool want_cpu = choice.device == "cpu" || (cfg.strategy.devices == "cpu" && choice.device != "gpu");
    const bool need_gpu = choice.device == "gpu" || (gpu_list && choice.device != "cpu");
    const std::string reason = gpu_unavailable_reason(found);

    if (need_gpu && !reason.empty())
        throw ConfigError(std::string(choice.device == "gpu" ? "--device gpu" : "strategy.devices") +
                          ": cannot use a GPU: " + reason + "; use --device cpu or strategy.devices: cpu");
    if (!want_cpu && reason.empty()) {
        place_on_gpus(cfg, found, need_gpu);
        return;
    }
    if (!want_cpu) fallback_note_ = reason + "; using the CPU";

    int64_t n = choice.replicas > 0 ? choice.replicas : cfg.strategy.replicas;
    if (n <= 0 && type_ == config::StrategyType::one_device) {
        n = 1;
    } else if (n <= 0) {
        // auto: a replica per core (of this worker's share of the machine),
        // each with at least 8 samples of the global batch. The replicas run
        // the same update as one (the gradients of a global batch), and on
        // this 2-core VM the reference job's epoch takes 0.27 s at 2 against
        // 0.38 s at 1 (batch norm without sync: true normalizes per replica).
        const int local_workers = processes_ ? processes_->local_size() : 1;
        const int machine = found.cpu.physical_cores > 0 ? found.cpu.physical_cores : found.cpu.logical_cores;
        const int cores = std::max(1, machine / local_workers);
        // A text sample is model.input_shape[0] positions, each a row of
        // every GEMM: there the share is 256+ positions (the small GPT's
        // batch of 12 x 64 runs 1.9x faster on 2 replicas than on 1).
        const bool text = cfg.data.format == config::DataFormat::text && !cfg.model.input_shape.empty();
        const int64_t positions = text ? cfg.model.input_shape[0] : 1;
        const int64_t by_batch =
            std::max<int64_t>(1, text ? cfg.training.batch_size * positions / 256 : cfg.training.batch_size / 8);
        n = std::min<int64_t>({cores, by_batch, 1024});
        auto_note_ = "auto: " + std::to_string(cores) + (cores == 1 ? " core" : " cores") +
                     (by_batch < cores ? (text ? ", 256+ positions each" : ", 8+ samples each") : "");
    }
    if (type_ == config::StrategyType::one_device && n > 1)
        throw ConfigError("strategy.type: one_device runs exactly one replica, but " + std::to_string(n) +
                          " were asked for; use strategy.type: mirrored");
    placement_.assign(static_cast<size_t>(n), -1);
}

void Strategy::place_on_gpus(const config::RunConfig& cfg, const device::Discovery& found, bool) {
    on_gpu_ = true;
    std::vector<int> gpus;
    if (cfg.strategy.devices == "all" || cfg.strategy.devices == "cpu") {
        for (const auto& g : found.gpus) gpus.push_back(g.index);
    } else {
        gpus = parse_gpu_list(cfg.strategy.devices);
        for (int g : gpus)
            if (g < 0 || g >= static_cast<int>(found.gpus.size()))
                throw ConfigError("strategy.devices: there is no GPU " + std::to_string(g) + "; this machine shows " +
                                  std::to_string(found.gpus.size()) + " (0.." +
                                  std::to_string(static_cast<int>(found.gpus.size()) - 1) +
                                  "; CUDA_VISIBLE_DEVICES renumbers them)");
    }
    const bool one_device = type_ == config::StrategyType::one_device;
    if (one_device) gpus.resize(1);
    // Several workers on one machine split its GPUs (an explicit list is taken as given).
    if (processes_ && cfg.strategy.devices == "all")
        gpus = gpus_for_local_process(gpus, processes_->local_rank(), processes_->local_size());
    const int64_t per_gpu = one_device ? 1 : cfg.strategy.replicas_per_gpu;
    for (int g : gpus)
        for (int64_t k = 0; k < per_gpu; ++k) placement_.push_back(g);

    using config::CommunicatorKind;
    CommunicatorKind kind = cfg.strategy.communicator;
    if (kind == CommunicatorKind::automatic) kind = per_gpu > 1 ? CommunicatorKind::device : CommunicatorKind::nccl;
    if (kind == CommunicatorKind::nccl && per_gpu > 1)
        throw ConfigError("strategy.communicator: nccl cannot run two replicas on one GPU (replicas_per_gpu: " +
                          std::to_string(per_gpu) + "); use communicator: device or auto");
    if (processes_ && kind != CommunicatorKind::nccl)
        throw ConfigError("strategy.communicator: multi_worker_mirrored joins GPUs of several workers with NCCL only; "
                          "use communicator: nccl (or auto) and replicas_per_gpu: 1");
    if (placement_.size() > 1 || processes_) communicator_ = kind;  // else none: one replica alone
}

std::string Strategy::describe(int64_t global_batch) const {
    const int n = global_replicas();
    const auto offsets = data::shard_offsets(global_batch, n);
    std::string where;
    if (on_gpu_) {
        where = "GPU ";
        for (size_t i = 0; i < placement_.size(); ++i) where += (i ? "," : "") + std::to_string(placement_[i]);
        if (communicator_) where += std::string("; ") + config::name_of(*communicator_);
    } else {
        where = n == 1 ? "CPU" : "CPU threads";
        if (!auto_note_.empty()) where += "; " + auto_note_;
    }
    std::string count = std::to_string(n) + (n == 1 ? " replica" : " replicas");
    if (processes_)
        count = std::to_string(workers()) + " workers x " + std::to_string(replicas()) +
                (replicas() == 1 ? " replica = " : " replicas = ") + count;
    std::string line = config::name_of(type_) + std::string(": ") + count + " (" + where + "), global batch " +
                       std::to_string(global_batch);
    if (n == 1) return line + " on one replica";
    const int64_t first = offsets[1] - offsets[0], last = offsets[n] - offsets[n - 1];
    if (first == last) return line + " = " + std::to_string(first) + " per replica";
    line += " = ";
    if (n > 8) {  // the first shards take one sample more
        const int64_t larger = global_batch - static_cast<int64_t>(n) * last;
        return line + std::to_string(larger) + " x " + std::to_string(first) + " + " + std::to_string(n - larger) +
               " x " + std::to_string(last) + " per replica";
    }
    for (int r = 0; r < n; ++r) line += (r ? "+" : "") + std::to_string(offsets[r + 1] - offsets[r]);
    return line + " per replica";
}

std::vector<std::unique_ptr<Replica>> Strategy::make_replicas(const config::RunConfig& cfg, int64_t global_batch,
                                                              const std::string& checkpoint, ReplicaUse use) const {
    const int n = replicas();
    const auto offsets = data::shard_offsets(global_batch, global_replicas());
    const int64_t max_rows = offsets[1] - offsets[0];  // the first shard is the largest
    // What the model holds at once: a micro-batch's share under training.accumulate_steps.
    const int64_t k = use == ReplicaUse::training ? std::max<int64_t>(1, cfg.training.accumulate_steps) : 1;
    const int64_t model_rows = (max_rows + k - 1) / k;
    std::vector<std::unique_ptr<Replica>> out;
    if (!on_gpu_) {
        // Replica threads (of every worker on this machine) share the cores;
        // BLAS threads beyond that only contend.
        const int sharing = n * (processes_ ? processes_->local_size() : 1);
        set_cpu_blas_threads(std::max(1, cpu_cores_ / sharing));
        // Zeroed buffers the machine lacks would bring the OOM killer, which says nothing.
        // Every replica on this machine (of every local worker) takes its share.
        const MemoryEstimate need = estimate_memory(cfg, model_rows, false, use == ReplicaUse::training);
        std::error_code ec;
        size_t file_bytes = checkpoint.empty() ? 0 : static_cast<size_t>(std::filesystem::file_size(checkpoint, ec));
        if (ec) file_bytes = 0;
        // Inference reads the weights (and batch norm's statistics) alone from it.
        if (use == ReplicaUse::inference) file_bytes = std::min(file_bytes, need.weight_bytes + need.state_bytes);
        // Each local worker reads its own copy.
        const int local_workers = processes_ ? processes_->local_size() : 1;
        check_host_memory(cfg, need, sharing, host_memory_available(), file_bytes * static_cast<size_t>(local_workers));
        auto comms = dist::make_local_communicators(n, cfg.strategy.stall_warning_seconds);
        // Across workers: this process's sum first, then one MPI all-reduce per process.
        if (processes_) comms = dist::make_hierarchical_communicators(std::move(comms), *processes_);
        for (int r = 0; r < n; ++r)
            out.push_back(
                std::make_unique<Replica>(cfg, std::make_unique<CpuBackend>(), std::move(comms[r]), max_rows, use));
        if (use == ReplicaUse::training) share_updates(out);
        return out;
    }
    // Every buffer is allocated before the communicators exist (and so before any collective).
    const MemoryEstimate need = estimate_memory(cfg, model_rows, true, use == ReplicaUse::training);
    for (int r = 0; r < n; ++r) {
        auto backend = make_gpu_backend(placement_[static_cast<size_t>(r)]);
        // What cannot fit stops here, with the sizes and what to lower (after the replicas before it took theirs).
        check_device_memory(cfg, need, backend->name(), backend->free_device_bytes());
        out.push_back(std::make_unique<Replica>(cfg, std::move(backend), nullptr, max_rows, use));
    }
    std::vector<std::unique_ptr<dist::Communicator>> comms;
    if (!communicator_) {
        comms = dist::make_local_communicators(1);  // one rank: every collective is a no-op
    } else {
        std::vector<Backend*> backends;
        for (auto& r : out) backends.push_back(&r->backend());
        comms = make_gpu_communicators(placement_, backends, *communicator_, out[0]->model().param_count(),
                                       processes_);
        // Their waits block in CUDA: a watch of the process names a stalled collective's missing replicas.
        std::vector<std::string> names;
        for (size_t r = 0; r < comms.size(); ++r)
            names.push_back("replica " + std::to_string(comms[r]->rank()) + " (" + out[r]->backend().name() + ")");
        // Across workers it asks the other workers' watches (over MPI) which of them are missing.
        comms = dist::watch_communicators(std::move(comms), std::move(names), cfg.strategy.stall_warning_seconds,
                                          processes_ ? processes_->rank() : 0, processes_ ? processes_->size() : 1,
                                          processes_ ? processes_->peer_channel() : nullptr);
    }
    for (int r = 0; r < n; ++r) out[static_cast<size_t>(r)]->set_comm(std::move(comms[static_cast<size_t>(r)]));
    return out;
}

}  // namespace gputrain::train
