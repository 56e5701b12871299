// NcclCommunicator: one rank of an NCCL clique (ncclCommInitAll in one
// process, ncclCommInitRank across processes). Every NCCL call of the rank
// runs on its own communication stream, in issue order (so the order of
// collectives is the same on every rank, as NCCL requires, even with buckets
// in flight while sync batch norm reduces its sums). An all-reduce of device
// data waits for an event recorded on the compute stream (the gradients are
// written), and the compute stream waits for the all-reduce's event only in
// allreduce_wait (before the optimizer step), so backward goes on meanwhile.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
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
        if (comm_stream_) cudaStreamDestroy(comm_stream_);
        cudaFree(scratch_);
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
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        cudaEvent_t written = take_event();
        DIST_CUDA_CHECK(cudaEventRecord(written, stream_));
        DIST_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, written, 0));
        free_events_.push_back(written);  // the wait above captured it: reusable now
        issued(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm_, comm_stream_), "ncclAllReduce");
        cudaEvent_t done = take_event();
        DIST_CUDA_CHECK(cudaEventRecord(done, comm_stream_));
        const PendingAllreduce pending{next_id_++};
        in_flight_.emplace(pending.id, done);
        return pending;
    }

    void allreduce_wait(PendingAllreduce pending) override {
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
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        for (size_t done = 0; done < count; done += kScratchDoubles) {
            const size_t n = std::min(kScratchDoubles, count - done);
            DIST_CUDA_CHECK(cudaMemcpyAsync(scratch_, data + done, n * sizeof(double), cudaMemcpyHostToDevice, comm_stream_));
            issued(ncclAllReduce(scratch_, scratch_, n, ncclDouble, ncclSum, comm_, comm_stream_), "ncclAllReduce");
            DIST_CUDA_CHECK(cudaMemcpyAsync(data + done, scratch_, n * sizeof(double), cudaMemcpyDeviceToHost, comm_stream_));
            wait_until_done([this] { return cudaStreamQuery(comm_stream_); });
        }
    }

    void barrier() override {
        double one = 1.0;
        allreduce_sum_host(&one, 1);
    }

    void abort() override {
        // ncclCommAbort makes ranks blocked in this clique's kernels return; safe from any thread.
        bool expected = false;
        if (aborted_.compare_exchange_strong(expected, true)) ncclCommAbort(comm_);
    }

private:
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
            ncclResult_t async = ncclSuccess;
            DIST_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
            if (async == ncclSuccess) return;
            if (async != ncclInProgress) {
                abort();
                check_nccl(async, call, rank_, device_);
            }
            if (aborted_.load()) throw Error("stopped because another replica failed");
            if (timeout_seconds_ > 0 && std::chrono::steady_clock::now() > deadline) {
                abort();
                throw Error("replica " + std::to_string(rank_) + " (cuda:" + std::to_string(device_) + "): " + call +
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
    void wait_until_done(const std::function<cudaError_t()>& query) {
        if (timeout_seconds_ <= 0) {
            DIST_CUDA_CHECK(cudaStreamSynchronize(comm_stream_));
            return;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
        for (;;) {
            const cudaError_t state = query();
            if (state == cudaSuccess) return;
            if (state != cudaErrorNotReady) DIST_CUDA_CHECK(state);
            ncclResult_t async = ncclSuccess;
            DIST_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
            if (async != ncclSuccess && async != ncclInProgress) {
                abort();
                DIST_NCCL_CHECK(async);
            }
            if (aborted_.load()) throw Error("stopped because another replica failed");
            if (std::chrono::steady_clock::now() > deadline) {
                abort();
                throw Error("replica " + std::to_string(rank_) + " (cuda:" + std::to_string(device_) +
                            "): an NCCL all-reduce did not finish within " +
                            std::to_string(static_cast<long long>(timeout_seconds_)) +
                            " s (strategy.timeout_seconds): a worker died, hangs or cannot be reached");
            }
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }

    static constexpr size_t kScratchDoubles = 64;
    ncclComm_t comm_;
    cudaStream_t stream_;       // the replica's compute stream
    cudaStream_t comm_stream_ = nullptr;
    int rank_, size_, device_;
    double timeout_seconds_;
    double* scratch_ = nullptr;
    std::atomic<bool> aborted_{false};
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
