#include "dist/process_group.hpp"

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

}  // namespace gputrain::dist
