// NCCL across the processes of a multi-worker run: rank 0 creates the unique
// id, the process group (MPI) broadcasts it, and this process's GPU replicas
// join one communicator spanning every GPU of every process. ncclCommInitRank
// for several GPUs of one process must sit inside one ncclGroupStart/End, or
// the first call would wait for ranks this same thread has not created yet.
#include "dist/cuda_status.hpp"
#include "dist/gpu_communicators.hpp"
#include "dist/nccl_communicator.hpp"

namespace gputrain::dist {

std::vector<std::unique_ptr<Communicator>> make_nccl_world_communicators(const std::vector<int>& devices,
                                                                         const std::vector<void*>& streams,
                                                                         ProcessGroup& processes) {
    const int local = static_cast<int>(devices.size());
    require_same_replica_count(processes, local);
    const int first_rank = processes.rank() * local, world = processes.size() * local;
    int rank_ = first_rank, device_ = devices.empty() ? -1 : devices[0];

    ncclUniqueId id{};
    if (processes.rank() == 0) DIST_NCCL_CHECK(ncclGetUniqueId(&id));
    processes.broadcast(&id, sizeof id, 0);

    std::vector<ncclComm_t> comms(static_cast<size_t>(local));
    DIST_NCCL_CHECK(ncclGroupStart());
    for (int i = 0; i < local; ++i) {
        rank_ = first_rank + i;
        device_ = devices[static_cast<size_t>(i)];
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        DIST_NCCL_CHECK(ncclCommInitRank(&comms[static_cast<size_t>(i)], world, id, rank_));
    }
    rank_ = first_rank;
    device_ = devices.empty() ? -1 : devices[0];
    DIST_NCCL_CHECK(ncclGroupEnd());

    std::vector<std::unique_ptr<Communicator>> out;
    for (int i = 0; i < local; ++i)
        out.push_back(make_nccl_communicator(comms[static_cast<size_t>(i)],
                                             static_cast<cudaStream_t>(streams[static_cast<size_t>(i)]),
                                             first_rank + i, world, devices[static_cast<size_t>(i)],
                                             processes.timeout_seconds()));
    return out;
}

}  // namespace gputrain::dist
