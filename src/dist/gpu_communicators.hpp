// Communicators between GPU replicas of one process (CUDA builds only; this
// header has no CUDA includes). Each rank's collectives run on that replica's
// stream (passed as void*: a cudaStream_t).
#pragma once

#include <memory>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/process_group.hpp"

namespace gputrain::dist {

// NCCL between the GPUs `devices[i]` (one rank per entry; NCCL refuses two
// ranks on one GPU). Created together with ncclCommInitAll.
std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<int>& devices,
                                                                   const std::vector<void*>& streams);

// NCCL across processes: this process's GPUs `devices[i]` become global ranks
// processes.rank() * devices.size() + i of one communicator over every GPU of
// every process. Collective over `processes` (every process calls it).
std::vector<std::unique_ptr<Communicator>> make_nccl_world_communicators(const std::vector<int>& devices,
                                                                         const std::vector<void*>& streams,
                                                                         ProcessGroup& processes);

// Without NCCL, any number of ranks per GPU: every rank's buffer is summed in
// rank order by a kernel reading the others' memory (same GPU, or peers with
// peer access), into a shared buffer of `max_count` floats on devices[0].
std::vector<std::unique_ptr<Communicator>> make_device_communicators(const std::vector<int>& devices,
                                                                     const std::vector<void*>& streams,
                                                                     size_t max_count);

}  // namespace gputrain::dist
