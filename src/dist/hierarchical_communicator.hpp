// HierarchicalCommunicator: replicas spread over several processes. A sum runs
// in two levels: over the replica threads of this process (the local
// communicator, rank order), then over processes (the ProcessGroup, called by
// the process's first replica only); the other local replicas then copy its
// result, so every replica of every process ends with the same global sum.
// Global rank = process rank * local replicas + local rank.
#pragma once

#include <memory>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/process_group.hpp"

namespace gputrain::dist {

// Wraps this process's local communicators (rank i at index i). `processes`
// must outlive the result. Checks that every process runs as many replicas
// (a collective over `processes`).
std::vector<std::unique_ptr<Communicator>> make_hierarchical_communicators(
    std::vector<std::unique_ptr<Communicator>> local, ProcessGroup& processes);

}  // namespace gputrain::dist
