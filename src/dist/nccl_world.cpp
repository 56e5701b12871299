// NCCL across the processes of a multi-worker run: rank 0 creates the unique
// id, the process group (MPI) broadcasts it, and this process's GPU replicas
// join one communicator spanning every GPU of every process. ncclCommInitRank
// for several GPUs of one process must sit inside one ncclGroupStart/End, or
// the first call would wait for ranks this same thread has not created yet.
//
// The initialisation waits for every worker, so it is nonblocking (ncclConfig_t
// blocking = 0) and polled with ncclCommGetAsyncError until it is done or
// strategy.timeout_seconds have passed; then the communicators are aborted.
#include <chrono>
#include <string>
#include <thread>

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

    std::vector<ncclComm_t> comms(static_cast<size_t>(local), nullptr);
    const auto abort_all = [&] {
        for (ncclComm_t comm : comms)
            if (comm) ncclCommAbort(comm);
    };
    // A nonblocking call either succeeds or reports ncclInProgress and finishes in the background.
    const auto started = [&](ncclResult_t status, const char* call) {
        if (status == ncclInProgress) return;
        if (status != ncclSuccess) abort_all();
        check_nccl(status, call, rank_, device_);
    };
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    DIST_NCCL_CHECK(ncclGroupStart());
    for (int i = 0; i < local; ++i) {
        rank_ = first_rank + i;
        device_ = devices[static_cast<size_t>(i)];
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        started(ncclCommInitRankConfig(&comms[static_cast<size_t>(i)], world, id, rank_, &config),
                "ncclCommInitRankConfig");
    }
    rank_ = first_rank;
    device_ = devices.empty() ? -1 : devices[0];
    started(ncclGroupEnd(), "ncclGroupEnd");

    const double timeout = processes.timeout_seconds();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    for (int i = 0; i < local;) {
        rank_ = first_rank + i;
        device_ = devices[static_cast<size_t>(i)];
        ncclResult_t state = ncclInProgress;
        started(ncclCommGetAsyncError(comms[static_cast<size_t>(i)], &state), "ncclCommGetAsyncError");
        if (state == ncclSuccess) {
            ++i;  // this one is ready; the next may still be connecting
            continue;
        }
        started(state, "ncclCommInitRankConfig");  // an error other than "still in progress" ends here
        if (std::chrono::steady_clock::now() > deadline) {
            abort_all();
            throw Error("worker " + std::to_string(processes.rank()) + " (replica " + std::to_string(rank_) + ", cuda:" +
                        std::to_string(device_) + "): the NCCL initialisation (ncclCommInitRank) did not finish within " +
                        std::to_string(static_cast<long long>(timeout)) +
                        " s (strategy.timeout_seconds): another worker did not join (it died, hangs, or cannot reach "
                        "this one: check NCCL_SOCKET_IFNAME)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    rank_ = first_rank;
    device_ = devices.empty() ? -1 : devices[0];

    std::vector<std::unique_ptr<Communicator>> out;
    for (int i = 0; i < local; ++i)
        out.push_back(make_nccl_communicator(comms[static_cast<size_t>(i)],
                                             static_cast<cudaStream_t>(streams[static_cast<size_t>(i)]),
                                             first_rank + i, world, devices[static_cast<size_t>(i)],
                                             processes.timeout_seconds()));
    return out;
}

}  // namespace gputrain::dist
