// NcclCommunicator: one rank of an NCCL clique (ncclCommInitAll in one
// process, ncclCommInitRank across processes); collectives are enqueued on the
// replica's stream, so they are ordered after the backward pass that produced
// the gradients and before the optimizer step.
#include <atomic>
#include <chrono>
#include <thread>

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
    }
    ~NcclCommunicator() override {
        cudaSetDevice(device_);
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

    void allreduce_sum(float* data, size_t count) override {
        // Every rank issues the same collectives in the same order (the trainer's loop guarantees it).
        issued(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm_, stream_), "ncclAllReduce");
        // Across processes a peer can die mid-collective: wait with a deadline
        // here instead of letting a later synchronisation hang.
        if (timeout_seconds_ > 0) wait_for_stream();
    }

    void allreduce_sum_host(double* data, size_t count) override {
        for (size_t done = 0; done < count; done += kScratchDoubles) {
            const size_t n = std::min(kScratchDoubles, count - done);
            DIST_CUDA_CHECK(cudaMemcpyAsync(scratch_, data + done, n * sizeof(double), cudaMemcpyHostToDevice, stream_));
            issued(ncclAllReduce(scratch_, scratch_, n, ncclDouble, ncclSum, comm_, stream_), "ncclAllReduce");
            DIST_CUDA_CHECK(cudaMemcpyAsync(data + done, scratch_, n * sizeof(double), cudaMemcpyDeviceToHost, stream_));
            wait_for_stream();
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

    // Waits for the stream. With a timeout (multi-worker runs), polls it
    // together with NCCL's asynchronous error state, as NCCL's fault-tolerance
    // guide describes, and aborts the communicator on an error or after the timeout.
    void wait_for_stream() {
        if (timeout_seconds_ <= 0) {
            DIST_CUDA_CHECK(cudaStreamSynchronize(stream_));
            return;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
        for (;;) {
            const cudaError_t state = cudaStreamQuery(stream_);
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
    cudaStream_t stream_;
    int rank_, size_, device_;
    double timeout_seconds_;
    double* scratch_ = nullptr;
    std::atomic<bool> aborted_{false};
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
