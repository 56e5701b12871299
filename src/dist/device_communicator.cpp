// DeviceCommunicator: the all-reduce of LocalCommunicator, on device memory.
// Host barriers order the phases; each rank syncs its stream before a barrier
// so the others see its buffer complete. Sums run in rank order, so every rank
// gets bit-identical results.
//
// The asynchronous all-reduce never blocks the host: each rank posts its
// buffer and an event recorded on its compute stream (the gradients are
// written); the last rank to post launches one kernel on its communication
// stream, after all those events, that sums in rank order and writes the sum
// into every rank's buffer, and records a completion event; allreduce_wait
// makes the waiting rank's compute stream wait for it (before the optimizer).
//
// That kernel, on one rank's device, writes every rank's buffer. After an
// abort a rank throws without its stream waiting for it, and replicas are
// destroyed one by one: a rank's memory (its gradients, in its backend's pool)
// could be freed while a kernel launched by another rank still writes it. So
// abort() and each rank's destructor synchronise EVERY rank's communication
// stream, and the group owns those streams (they live until the last rank
// goes). Nothing is launched on them after an abort (starts check `aborted`
// under the mutex), so once abort() has returned no kernel of the group runs
// any more. Without an abort, a replica's memory goes back to its backend's
// pool and is freed (cudaFree) only when the backend goes, after the
// replica's communicator (Replica's members), whose destructor has waited.
#include <algorithm>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "dist/abortable_barrier.hpp"
#include "dist/cuda_status.hpp"
#include "dist/device_reduce.hpp"
#include "dist/gpu_communicators.hpp"

namespace gputrain::dist {

namespace {

struct InFlight {
    std::vector<float*> buffers;        // by rank
    std::vector<cudaEvent_t> written;   // by rank: recorded on its compute stream
    size_t count = 0;
    int arrived = 0;
    int waited = 0;
    cudaEvent_t done = nullptr;         // recorded after the kernel (on done_rank's device)
    int done_rank = -1;
};

struct DeviceGroup {
    explicit DeviceGroup(int n)
        : barrier(n), float_buffers(static_cast<size_t>(n)), host_buffers(static_cast<size_t>(n)),
          free_events(static_cast<size_t>(n)), comm_streams(static_cast<size_t>(n), nullptr) {}
    AbortableBarrier barrier;
    std::vector<float*> float_buffers;
    std::vector<double*> host_buffers;
    std::vector<double> host_sum;
    float* sum = nullptr;  // max_count floats on devices[0]
    int sum_device = 0;
    size_t max_count = 0;
    // The asynchronous all-reduces in flight, by the sequence number every
    // rank gives its n-th start; events no longer in use, by the rank (device)
    // that created them. Guarded by `mutex`.
    std::mutex mutex;
    std::condition_variable changed;
    std::map<uint64_t, InFlight> in_flight;
    std::vector<std::vector<cudaEvent_t>> free_events;
    std::vector<int> devices;
    bool aborted = false;
    // Each rank's communication stream (created by the rank, by rank), where
    // the sums it completes run. Not guarded: written only while the ranks are created.
    std::vector<cudaStream_t> comm_streams;

    // Waits until every rank's communication stream has drained, ignoring
    // errors (a lost device has nothing left to run). From any thread; the
    // caller's current device is kept.
    void synchronize_comm_streams() {
        int current = 0;
        const bool restore = cudaGetDevice(&current) == cudaSuccess;
        for (size_t r = 0; r < comm_streams.size(); ++r) {
            if (!comm_streams[r]) continue;
            cudaSetDevice(devices[r]);
            cudaStreamSynchronize(comm_streams[r]);
        }
        if (restore) cudaSetDevice(current);
    }

    ~DeviceGroup() {
        synchronize_comm_streams();
        for (size_t r = 0; r < comm_streams.size(); ++r) {
            if (!comm_streams[r]) continue;
            cudaSetDevice(devices[r]);
            cudaStreamDestroy(comm_streams[r]);
        }
        for (size_t r = 0; r < free_events.size(); ++r) {
            cudaSetDevice(devices[r]);
            for (cudaEvent_t e : free_events[r]) cudaEventDestroy(e);
        }
        if (sum) {
            cudaSetDevice(sum_device);
            cudaFree(sum);
        }
    }
};

class DeviceCommunicator : public Communicator {
public:
    DeviceCommunicator(std::shared_ptr<DeviceGroup> group, cudaStream_t stream, int rank, int device)
        : group_(std::move(group)), stream_(stream), rank_(rank), device_(device) {
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        int lowest = 0, highest = 0;
        DIST_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
        DIST_CUDA_CHECK(cudaStreamCreateWithPriority(&comm_stream_, cudaStreamNonBlocking, highest));
        group_->comm_streams[static_cast<size_t>(rank_)] = comm_stream_;
    }
    // Before this replica's backend frees its memory (see the top of the file):
    // a sum launched by any rank may still write it.
    ~DeviceCommunicator() override { group_->synchronize_comm_streams(); }

    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(group_->float_buffers.size()); }

    void allreduce_sum(float* data, size_t count) override {
        DeviceGroup& g = *group_;
        const int n = size();
        if (n == 1) return;
        if (count > g.max_count)
            throw Error("replica " + std::to_string(rank_) + ": all-reduce of " + std::to_string(count) +
                        " floats exceeds the communicator's buffer of " + std::to_string(g.max_count));
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        g.float_buffers[static_cast<size_t>(rank_)] = data;
        DIST_CUDA_CHECK(cudaStreamSynchronize(stream_));  // this rank's gradients are complete
        g.barrier.arrive_and_wait();
        DeviceBuffers buffers{};
        buffers.count = n;
        for (int k = 0; k < n; ++k) buffers.ptr[k] = g.float_buffers[static_cast<size_t>(k)];
        const size_t begin = count * rank_ / n, end = count * (rank_ + 1) / n;
        launch_sum_buffers(buffers, g.sum, begin, end, stream_);
        DIST_CUDA_CHECK(cudaGetLastError());
        DIST_CUDA_CHECK(cudaStreamSynchronize(stream_));
        g.barrier.arrive_and_wait();  // every slice of the sum is written
        DIST_CUDA_CHECK(cudaMemcpyAsync(data, g.sum, count * sizeof(float), cudaMemcpyDefault, stream_));
        DIST_CUDA_CHECK(cudaStreamSynchronize(stream_));
        g.barrier.arrive_and_wait();  // nobody overwrites the sum or a buffer before all have read
    }

    PendingAllreduce allreduce_sum_start(float* data, size_t count) override {
        DeviceGroup& g = *group_;
        const int n = size();
        const PendingAllreduce pending{next_async_++};
        if (n == 1) return pending;
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        std::unique_lock<std::mutex> lock(g.mutex);
        if (g.aborted) throw Error("stopped because another replica failed");
        cudaEvent_t written = take_event(g);
        DIST_CUDA_CHECK(cudaEventRecord(written, stream_));
        InFlight& op = g.in_flight[pending.id];
        if (op.arrived == 0) {
            op.buffers.assign(static_cast<size_t>(n), nullptr);
            op.written.assign(static_cast<size_t>(n), nullptr);
            op.count = count;
        } else if (op.count != count) {
            throw Error("internal: replica " + std::to_string(rank_) + " started an all-reduce of " +
                        std::to_string(count) + " floats where another started " + std::to_string(op.count));
        }
        op.buffers[static_cast<size_t>(rank_)] = data;
        op.written[static_cast<size_t>(rank_)] = written;
        if (++op.arrived < n) return pending;
        // The last to arrive: its communication stream waits for every rank's
        // gradients, then sums them into every buffer.
        DeviceBuffers buffers{};
        buffers.count = n;
        for (int k = 0; k < n; ++k) {
            buffers.ptr[k] = op.buffers[static_cast<size_t>(k)];
            DIST_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, op.written[static_cast<size_t>(k)], 0));
        }
        launch_sum_into_all(buffers, count, comm_stream_);
        DIST_CUDA_CHECK(cudaGetLastError());
        op.done = take_event(g);
        op.done_rank = rank_;
        DIST_CUDA_CHECK(cudaEventRecord(op.done, comm_stream_));
        lock.unlock();
        g.changed.notify_all();
        return pending;
    }

    void allreduce_wait(PendingAllreduce pending) override {
        DeviceGroup& g = *group_;
        if (size() == 1) return;
        std::unique_lock<std::mutex> lock(g.mutex);
        auto it = g.in_flight.find(pending.id);
        if (it == g.in_flight.end()) throw Error("internal: waiting for an all-reduce that was never started");
        g.changed.wait(lock, [&] { return it->second.done != nullptr || g.aborted; });
        if (!it->second.done) throw Error("stopped because another replica failed");
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        DIST_CUDA_CHECK(cudaStreamWaitEvent(stream_, it->second.done, 0));
        // The kernel has been queued after this rank's event: it may be recorded again.
        g.free_events[static_cast<size_t>(rank_)].push_back(it->second.written[static_cast<size_t>(rank_)]);
        if (++it->second.waited == size()) {
            g.free_events[static_cast<size_t>(it->second.done_rank)].push_back(it->second.done);
            g.in_flight.erase(it);
        }
    }

    void allreduce_sum_host(double* data, size_t count) override {
        DeviceGroup& g = *group_;
        const int n = size();
        if (n == 1) return;
        if (rank_ == 0 && g.host_sum.size() < count) g.host_sum.resize(count);
        g.host_buffers[static_cast<size_t>(rank_)] = data;
        g.barrier.arrive_and_wait();
        const size_t begin = count * rank_ / n, end = count * (rank_ + 1) / n;
        for (size_t i = begin; i < end; ++i) {
            double s = g.host_buffers[0][i];
            for (int k = 1; k < n; ++k) s += g.host_buffers[static_cast<size_t>(k)][i];
            g.host_sum[i] = s;
        }
        g.barrier.arrive_and_wait();
        std::copy(g.host_sum.begin(), g.host_sum.begin() + static_cast<std::ptrdiff_t>(count), data);
        g.barrier.arrive_and_wait();
    }

    void barrier() override {
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        DIST_CUDA_CHECK(cudaStreamSynchronize(stream_));
        if (size() > 1) group_->barrier.arrive_and_wait();
    }

    void abort() override {
        group_->barrier.abort();
        {
            std::lock_guard<std::mutex> lock(group_->mutex);
            group_->aborted = true;
        }
        group_->changed.notify_all();
        // No start launches a sum from here on: wait for those already
        // launched, which may write any rank's buffer (top of the file).
        group_->synchronize_comm_streams();
    }

private:
    // An event of this rank's device, from its free list or new (the first
    // steps only). Called with the group's mutex held.
    cudaEvent_t take_event(DeviceGroup& g) {
        return take_event_from(g.free_events[static_cast<size_t>(rank_)], [&](cudaError_t status) {
            check_cuda(status, "cudaEventCreateWithFlags(&e, cudaEventDisableTiming)", rank_, device_);
        });
    }

    std::shared_ptr<DeviceGroup> group_;
    cudaStream_t stream_;
    cudaStream_t comm_stream_ = nullptr;  // where this rank launches the sums it completes (owned by the group)
    int rank_, device_;
    uint64_t next_async_ = 0;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_device_communicators(const std::vector<int>& devices,
                                                                     const std::vector<void*>& streams,
                                                                     size_t max_count) {
    const int n = static_cast<int>(devices.size());
    const int rank_ = -1;
    int device_ = devices.empty() ? -1 : devices[0];
    if (n > kMaxDeviceRanks)
        throw Error("the device communicator supports at most " + std::to_string(kMaxDeviceRanks) + " replicas, got " +
                    std::to_string(n) + "; use strategy.communicator: nccl");
    auto group = std::make_shared<DeviceGroup>(n);
    group->sum_device = device_;
    group->max_count = max_count;
    group->devices = devices;
    // Kernels on every device read the others' buffers: enable peer access where devices differ.
    for (int a : devices) {
        for (int b : devices) {
            if (a == b) continue;
            int can = 0;
            device_ = a;
            DIST_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
            if (!can)
                throw Error("GPU " + std::to_string(a) + " cannot access GPU " + std::to_string(b) +
                            "'s memory directly; use strategy.communicator: nccl");
            DIST_CUDA_CHECK(cudaSetDevice(a));
            const cudaError_t status = cudaDeviceEnablePeerAccess(b, 0);
            if (status == cudaErrorPeerAccessAlreadyEnabled)
                cudaGetLastError();  // clear the sticky-free "already enabled" status
            else
                DIST_CUDA_CHECK(status);
        }
    }
    device_ = devices.empty() ? -1 : devices[0];
    if (n > 1) {
        DIST_CUDA_CHECK(cudaSetDevice(device_));
        DIST_CUDA_CHECK(cudaMalloc(&group->sum, std::max<size_t>(1, max_count) * sizeof(float)));
    }
    std::vector<std::unique_ptr<Communicator>> out;
    for (int r = 0; r < n; ++r)
        out.push_back(std::make_unique<DeviceCommunicator>(group, static_cast<cudaStream_t>(streams[static_cast<size_t>(r)]),
                                                           r, devices[static_cast<size_t>(r)]));
    return out;
}

}  // namespace gputrain::dist
