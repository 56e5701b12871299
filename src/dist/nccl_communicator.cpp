// NcclCommunicator: one rank of an NCCL clique (ncclCommInitAll in one
// process, ncclCommInitRank across processes). Every NCCL call of the rank
// runs on its own communication stream, in issue order (so the order of
// collectives is the same on every rank, as NCCL requires, even with buckets
// in flight while sync batch norm reduces its sums). An all-reduce of device
// data waits for an event recorded on the compute stream (the gradients are
// written), and the compute stream waits for the all-reduce's event only in
// allreduce_wait (before the optimizer step), so backward goes on meanwhile.
//
// abort() comes from another replica's thread while this rank's own thread
// may be inside a collective. NCCL allows one thread at a time on a
// communicator, and ncclCommAbort frees it: every NCCL call and the abort
// take nccl_mutex_, and each call checks aborted_ under it first (after an
// abort the handle is gone). The mutex is held only around single NCCL calls,
// never across a host wait or poll loop, so an abort can always get in while
// the owner waits; the loops check aborted_ on every round and leave.
//
// Host all-reduces (metrics, barrier) copy through a pinned host buffer and
// poll an event recorded after the copy back: a copy into pageable memory
// would block the host until the all-reduce before it had finished, out of
// reach of the multi-worker timeout.
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "dist/cuda_status.hpp"
#include "dist/gpu_communicators.hpp"
#include "dist/nccl_communicator.hpp"

namespace gputrain::dist {

namespace {

class NcclCommunicator : public Communicator {
public:
    NcclCommunicator(ncclComm_t comm, cudaStream_t stream, int rank, int size, int device, double timeout_seconds)
        : comm_(comm), stream_(stream), rank_(rank), size_(size), device_(device), timeout_seconds_(timeout_seconds) {
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        DIST_CUDA_CHECK(cudaMalloc(&scratch_, kScratchDoubles * sizeof(double)));
        DIST_CUDA_CHECK(cudaHostAlloc(&host_scratch_, kScratchDoubles * sizeof(double), cudaHostAllocDefault));
        DIST_CUDA_CHECK(cudaEventCreateWithFlags(&host_copied_, cudaEventDisableTiming));
        // The highest priority, so a bucket's all-reduce is scheduled ahead of backward's kernels.
        int lowest = 0, highest = 0;
        DIST_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
        DIST_CUDA_CHECK(cudaStreamCreateWithPriority(&comm_stream_, cudaStreamNonBlocking, highest));
    }
    ~NcclCommunicator() override {
        cudaSetDevice(device_);
        if (comm_stream_) cudaStreamSynchronize(comm_stream_);
        for (auto& [id, done] : in_flight_) cudaEventDestroy(done);
        for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
        if (host_copied_) cudaEventDestroy(host_copied_);
        if (comm_stream_) cudaStreamDestroy(comm_stream_);
        cudaFree(scratch_);
        cudaFreeHost(host_scratch_);
        if (aborted_.load()) return;
        if (timeout_seconds_ > 0 && !finalized()) {
            ncclCommAbort(comm_);
            return;
        }
        ncclCommDestroy(comm_);
    }

    int rank() const override { return rank_; }
    int size() const override { return size_; }

    void allreduce_sum(float* data, size_t count) override { allreduce_wait(allreduce_sum_start(data, count)); }

    PendingAllreduce allreduce_sum_start(float* data, size_t count) override {
        // Every rank issues the same collectives in the same order (the trainer's loop guarantees it).
        throw_if_aborted();
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        cudaEvent_t written = take_event();
        DIST_CUDA_CHECK(cudaEventRecord(written, stream_));
        DIST_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, written, 0));
        free_events_.push_back(written);  // the wait above captured it: reusable now
        all_reduce(data, count, ncclFloat);
        cudaEvent_t done = take_event();
        DIST_CUDA_CHECK(cudaEventRecord(done, comm_stream_));
        const PendingAllreduce pending{next_id_++};
        in_flight_.emplace(pending.id, done);
        return pending;
    }

    void allreduce_wait(PendingAllreduce pending) override {
        throw_if_aborted();
        auto it = in_flight_.find(pending.id);
        if (it == in_flight_.end()) throw Error("internal: waiting for an all-reduce that was never started");
        const cudaEvent_t done = it->second;
        in_flight_.erase(it);
        free_events_.push_back(done);
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        DIST_CUDA_CHECK(cudaStreamWaitEvent(stream_, done, 0));
        // Across processes a peer can die mid-collective: wait with a deadline
        // here instead of letting a later synchronisation hang.
        if (timeout_seconds_ > 0) wait_until_done([done] { return cudaEventQuery(done); });
    }

    void allreduce_sum_host(double* data, size_t count) override {
        throw_if_aborted();
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        for (size_t done = 0; done < count; done += kScratchDoubles) {
            const size_t n = std::min(kScratchDoubles, count - done);
            // Both copies through pinned memory: truly asynchronous, so the
            // wait below (with its deadline) is the only place the host waits.
            std::memcpy(host_scratch_, data + done, n * sizeof(double));
            DIST_CUDA_CHECK(
                cudaMemcpyAsync(scratch_, host_scratch_, n * sizeof(double), cudaMemcpyHostToDevice, comm_stream_));
            all_reduce(scratch_, n, ncclDouble);
            DIST_CUDA_CHECK(
                cudaMemcpyAsync(host_scratch_, scratch_, n * sizeof(double), cudaMemcpyDeviceToHost, comm_stream_));
            DIST_CUDA_CHECK(cudaEventRecord(host_copied_, comm_stream_));
            wait_until_done([this] { return cudaEventQuery(host_copied_); });
            std::memcpy(data + done, host_scratch_, n * sizeof(double));
        }
    }

    void barrier() override {
        double one = 1.0;
        allreduce_sum_host(&one, 1);
    }

    void abort() override {
        // ncclCommAbort makes ranks blocked in this clique's kernels return.
        // From any thread: it waits for the NCCL call in progress (if any) on
        // this communicator, never for a host wait (the mutex is not held there).
        bool expected = false;
        if (!aborted_.compare_exchange_strong(expected, true)) return;
        std::lock_guard<std::mutex> lock(nccl_mutex_);
        ncclCommAbort(comm_);
    }

private:
    void throw_if_aborted() const {
        if (aborted_.load()) throw Error("stopped because another replica failed");
    }

    // ncclAllReduce in place on the communication stream, once NCCL has issued it (see issued()).
    void all_reduce(void* data, size_t count, ncclDataType_t type) {
        ncclResult_t status = ncclSuccess;
        {
            std::lock_guard<std::mutex> lock(nccl_mutex_);
            throw_if_aborted();  // after an abort, comm_ is freed
            status = ncclAllReduce(data, data, count, type, ncclSum, comm_, comm_stream_);
        }
        issued(status, "ncclAllReduce");
    }

    // NCCL's asynchronous error state (an error, ncclInProgress or
    // ncclSuccess); throws the usual error instead once aborted.
    ncclResult_t async_error() {
        std::lock_guard<std::mutex> lock(nccl_mutex_);
        throw_if_aborted();
        ncclResult_t async = ncclSuccess;
        DIST_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
        return async;
    }

    // Across workers (nonblocking communicators) the documented teardown:
    // ncclCommFinalize, then poll until the communicator is quiescent, within
    // the timeout (a dead peer must not hang the exit). False: abort instead.
    bool finalized() {
        const ncclResult_t started = ncclCommFinalize(comm_);
        if (started != ncclSuccess && started != ncclInProgress) return false;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
        for (;;) {
            ncclResult_t state = ncclInProgress;
            if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return false;
            if (state == ncclSuccess) return true;
            if (state != ncclInProgress || std::chrono::steady_clock::now() > deadline) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }

    // Communicators across workers are nonblocking (nccl_world.cpp): a call may
    // return ncclInProgress while NCCL still connects the peers, and is on the
    // stream only once ncclCommGetAsyncError says ncclSuccess; nothing else may
    // be enqueued before that. In-process communicators are blocking.
    void issued(ncclResult_t status, const char* call) {
        if (status != ncclInProgress) {
            check_nccl(status, call, rank_, device_);
            return;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
        for (;;) {
            const ncclResult_t async = async_error();
            if (async == ncclSuccess) return;
            if (async != ncclInProgress) {
                abort();
                check_nccl(async, call, rank_, device_);
            }
            if (timeout_seconds_ > 0 && std::chrono::steady_clock::now() > deadline) {
                abort();
                throw CollectiveTimeout("replica " + std::to_string(rank_) + " (cuda:" + std::to_string(device_) + "): " + call +
                            " was not issued within " + std::to_string(static_cast<long long>(timeout_seconds_)) +
                            " s (strategy.timeout_seconds): a worker died, hangs or cannot be reached");
            }
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }

    cudaEvent_t take_event() {
        return take_event_from(free_events_, [&](cudaError_t status) {
            check_cuda(status, "cudaEventCreateWithFlags(&e, cudaEventDisableTiming)", rank_, device_);
        });
    }

    // Waits until `query` (a stream or an event) says the work is done.
    // With a timeout (multi-worker runs), polls it together with NCCL's
    // asynchronous error state, as NCCL's fault-tolerance guide describes, and
    // aborts the communicator on an error or after the timeout.
    // Without a timeout (one process) the host blocks in the synchronisation;
    // an abort from another thread makes NCCL's kernels return, and then this
    // rank throws the usual error (its sum is incomplete).
    void wait_until_done(const std::function<cudaError_t()>& query) {
        if (timeout_seconds_ <= 0) {
            const cudaError_t status = cudaStreamSynchronize(comm_stream_);
            throw_if_aborted();
            DIST_CUDA_CHECK(status);
            return;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
        for (;;) {
            throw_if_aborted();
            const cudaError_t state = query();
            if (state == cudaSuccess) return;
            if (state != cudaErrorNotReady) DIST_CUDA_CHECK(state);
            const ncclResult_t async = async_error();
            if (async != ncclSuccess && async != ncclInProgress) {
                abort();
                DIST_NCCL_CHECK(async);
            }
            if (std::chrono::steady_clock::now() > deadline) {
                abort();
                throw CollectiveTimeout("replica " + std::to_string(rank_) + " (cuda:" + std::to_string(device_) +
                            "): an NCCL all-reduce did not finish within " +
                            std::to_string(static_cast<long long>(timeout_seconds_)) +
                            " s (strategy.timeout_seconds): a worker died, hangs or cannot be reached");
            }
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }

    static constexpr size_t kScratchDoubles = 64;  // a host all-reduce's chunk
    ncclComm_t comm_;
    cudaStream_t stream_;       // the replica's compute stream
    cudaStream_t comm_stream_ = nullptr;
    int rank_, size_, device_;
    double timeout_seconds_;
    double* scratch_ = nullptr;       // device: one chunk of a host all-reduce
    double* host_scratch_ = nullptr;  // pinned host: the same chunk on its way in and out
    cudaEvent_t host_copied_ = nullptr;  // recorded after a chunk's copy back to host_scratch_
    std::atomic<bool> aborted_{false};
    std::mutex nccl_mutex_;  // one NCCL call (or the abort) at a time on comm_
    uint64_t next_id_ = 0;
    std::map<uint64_t, cudaEvent_t> in_flight_;  // started all-reduce -> its completion event
    std::vector<cudaEvent_t> free_events_;       // recorded events no longer waited for, for reuse
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(ncclComm_t comm, cudaStream_t stream, int rank, int size,
                                                     int device, double timeout_seconds) {
    return std::make_unique<NcclCommunicator>(comm, stream, rank, size, device, timeout_seconds);
}

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<int>& devices,
                                                                   const std::vector<void*>& streams) {
    const int n = static_cast<int>(devices.size());
    std::vector<ncclComm_t> comms(static_cast<size_t>(n));
    const int rank_ = -1, device_ = devices.empty() ? -1 : devices[0];
    DIST_NCCL_CHECK(ncclCommInitAll(comms.data(), n, devices.data()));
    std::vector<std::unique_ptr<Communicator>> out;
    for (int r = 0; r < n; ++r)
        out.push_back(make_nccl_communicator(comms[static_cast<size_t>(r)],
                                             static_cast<cudaStream_t>(streams[static_cast<size_t>(r)]), r, n,
                                             devices[static_cast<size_t>(r)], /*timeout_seconds=*/0));
    return out;
}

}  // namespace gputrain::dist
