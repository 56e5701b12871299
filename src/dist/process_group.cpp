#include "dist/process_group.hpp"

#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace gputrain::dist {

void require_same_replica_count(ProcessGroup& processes, int local_replicas) {
    double total = local_replicas;
    processes.allreduce_sum(&total, 1);
    // The sum equals size * count only in processes that match the mean; with
    // unequal counts at least one process differs from it and stops the job.
    const double mean = total / processes.size();
    if (mean != static_cast<double>(local_replicas))
        throw ConfigError("strategy: worker " + std::to_string(processes.rank()) + " runs " +
                          std::to_string(local_replicas) + " replicas but the workers average " + std::to_string(mean) +
                          "; every worker must run the same number (same strategy.replicas, same GPU count per "
                          "worker)");
}

void require_same(ProcessGroup& processes, const std::string& fingerprint, const Disagreement& says) {
    char mine[128] = {};
    fingerprint.copy(mine, sizeof mine - 1);
    char first[128];
    std::memcpy(first, mine, sizeof first);
    processes.broadcast(first, sizeof first, 0);
    const bool differs = std::memcmp(first, mine, sizeof mine) != 0;
    double differing = differs ? 1.0 : 0.0;
    processes.allreduce_sum(&differing, 1);
    if (differing == 0) return;
    const auto count = static_cast<int64_t>(differing);
    if (differs)
        throw WorkersDisagree(says.prefix + "worker " + std::to_string(processes.rank()) + " " + says.one +
                              " than worker 0 (fingerprint " + std::string(mine) + " against " + std::string(first) +
                              "); " + says.remedy);
    throw WorkersDisagree(says.prefix + std::to_string(count) + " of " + std::to_string(processes.size()) +
                          " workers " + (count == 1 ? says.one : says.many) + " than worker 0; " + says.remedy);
}

void require_same_config(ProcessGroup& processes, const std::string& fingerprint) {
    require_same(processes, fingerprint,
                 {"strategy: ", "trains another config", "train another config",
                  "start every worker with the same config and --set options (data paths, checkpoint and logging "
                  "keys and strategy.devices may differ)"});
}

}  // namespace gputrain::dist
