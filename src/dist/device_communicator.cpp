// DeviceCommunicator: the all-reduce of LocalCommunicator, on device memory.
// Host barriers order the phases; each rank syncs its stream before a barrier
// so the others see its buffer complete. Sums run in rank order, so every rank
// gets bit-identical results.
#include <algorithm>
#include <memory>

#include "dist/abortable_barrier.hpp"
#include "dist/cuda_status.hpp"
#include "dist/device_reduce.hpp"
#include "dist/gpu_communicators.hpp"

namespace gputrain::dist {

namespace {

struct DeviceGroup {
    explicit DeviceGroup(int n) : barrier(n), float_buffers(static_cast<size_t>(n)), host_buffers(static_cast<size_t>(n)) {}
    AbortableBarrier barrier;
    std::vector<float*> float_buffers;
    std::vector<double*> host_buffers;
    std::vector<double> host_sum;
    float* sum = nullptr;  // max_count floats on devices[0]
    int sum_device = 0;
    size_t max_count = 0;
    ~DeviceGroup() {
        if (sum) {
            cudaSetDevice(sum_device);
            cudaFree(sum);
        }
    }
};

class DeviceCommunicator : public Communicator {
public:
    DeviceCommunicator(std::shared_ptr<DeviceGroup> group, cudaStream_t stream, int rank, int device)
        : group_(std::move(group)), stream_(stream), rank_(rank), device_(device) {}

    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(group_->float_buffers.size()); }

    void allreduce_sum(float* data, size_t count) override {
        DeviceGroup& g = *group_;
        const int n = size();
        if (n == 1) return;
        if (count > g.max_count)
            throw Error("replica " + std::to_string(rank_) + ": all-reduce of " + std::to_string(count) +
                        " floats exceeds the communicator's buffer of " + std::to_string(g.max_count));
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
        DIST_CUDA_CHECK(cudaStreamSynchronize(stream_));
        if (size() > 1) group_->barrier.arrive_and_wait();
    }

    void abort() override { group_->barrier.abort(); }

private:
    std::shared_ptr<DeviceGroup> group_;
    cudaStream_t stream_;
    int rank_, device_;
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
