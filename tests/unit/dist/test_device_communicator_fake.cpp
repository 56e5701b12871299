// The device communicator's device selection and its teardown after an
// asynchronous sum, on the CPU: this file defines the CUDA runtime calls the
// communicator makes and its two kernels' launchers (only the CUDA headers are
// used: no GPU, no libcudart). A fake stream runs its launched work when it is
// synchronised, as a GPU may run it any time before that; a launch notes
// whether the current device is the stream's. The real kernels are tested on
// a GPU only (tests/gpu).
#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "dist/device_reduce.hpp"
#include "dist/gpu_communicators.hpp"
#include "fake_cuda_common.hpp"

using namespace gputrain;

// The fake stream: the CUDA headers declare the type and never define it.
struct CUstream_st {
    int device = 0;
    bool destroyed = false;
    std::vector<std::function<void()>> pending;  // launched, not yet run
};

namespace {

thread_local int current_device = 0;
std::mutex fakes_mutex;
int wrong_device_launches = 0;  // launches on a stream of another device than the current one
int stale_stream_uses = 0;      // synchronisations of a destroyed stream

void reset_fakes() {
    std::lock_guard<std::mutex> lock(fakes_mutex);
    wrong_device_launches = 0;
    stale_stream_uses = 0;
}

void launch(cudaStream_t stream, std::function<void()> work) {
    std::lock_guard<std::mutex> lock(fakes_mutex);
    if (stream->device != current_device) ++wrong_device_launches;
    stream->pending.push_back(std::move(work));
}

// Two ranks' compute streams (devices 0 and 1) and their communicators over `floats` floats.
struct TwoRanks {
    CUstream_st compute[2];
    std::vector<std::unique_ptr<dist::Communicator>> comms;
    explicit TwoRanks(size_t floats) {
        compute[0].device = 0;
        compute[1].device = 1;
        comms = dist::make_device_communicators({0, 1}, {&compute[0], &compute[1]}, floats);
    }
};

}  // namespace

// The kernels' launchers (device_reduce.cu), in rank order as there.
namespace gputrain::dist {
void launch_sum_buffers(const DeviceBuffers& buffers, float* out, size_t begin, size_t end, void* stream) {
    launch(static_cast<cudaStream_t>(stream), [=] {
        for (size_t i = begin; i < end; ++i) {
            float s = buffers.ptr[0][i];
            for (int k = 1; k < buffers.count; ++k) s += buffers.ptr[k][i];
            out[i] = s;
        }
    });
}
void launch_sum_into_all(const DeviceBuffers& buffers, size_t count, void* stream) {
    launch(static_cast<cudaStream_t>(stream), [=] {
        for (size_t i = 0; i < count; ++i) {
            float s = buffers.ptr[0][i];
            for (int k = 1; k < buffers.count; ++k) s += buffers.ptr[k][i];
            for (int k = 0; k < buffers.count; ++k) buffers.ptr[k][i] = s;
        }
    });
}
}  // namespace gputrain::dist

// The CUDA runtime, as far as the communicator uses it.
const char* cudaGetErrorString(cudaError_t) { return "fake CUDA error"; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaSetDevice(int device) {
    current_device = device;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
    *device = current_device;
    return cudaSuccess;
}
cudaError_t cudaDeviceCanAccessPeer(int* can, int, int) {
    *can = 1;
    return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned int) { return cudaSuccess; }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int, int) {
    *s = new CUstream_st;
    (*s)->device = current_device;
    return cudaSuccess;
}
// Marked, not freed: a later use is counted instead of being undefined.
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    std::lock_guard<std::mutex> lock(fakes_mutex);
    s->destroyed = true;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    std::vector<std::function<void()>> work;
    {
        std::lock_guard<std::mutex> lock(fakes_mutex);
        if (s->destroyed) ++stale_stream_uses;
        work.swap(s->pending);
    }
    for (auto& w : work) w();
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t) {
    std::memcpy(dst, src, bytes);
    return cudaSuccess;
}

TEST_CASE("Every all-reduce launches its sums with the rank's own device current") {
    reset_fakes();
    TwoRanks ranks(4);
    std::vector<std::vector<float>> data = {{1, 2, 3, 4}, {10, 20, 30, 40}};
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
        threads.emplace_back([&, r] {
            current_device = 7;  // the thread's device is someone else's
            ranks.comms[static_cast<size_t>(r)]->allreduce_sum(data[static_cast<size_t>(r)].data(), 4);
            current_device = 7;
            ranks.comms[static_cast<size_t>(r)]->allreduce_wait(
                ranks.comms[static_cast<size_t>(r)]->allreduce_sum_start(data[static_cast<size_t>(r)].data(), 4));
            ranks.comms[static_cast<size_t>(r)]->barrier();
        });
    }
    for (auto& t : threads) t.join();
    ranks.comms.clear();  // runs the asynchronous sum (see the last case)
    CHECK(data[0] == std::vector<float>{22, 44, 66, 88});
    CHECK(data[1] == data[0]);
    CHECK(wrong_device_launches == 0);
}

TEST_CASE("An abort returns only once a sum another rank launched, writing this rank's buffer, is done") {
    reset_fakes();
    TwoRanks ranks(3);
    std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
    (void)ranks.comms[0]->allreduce_sum_start(a.data(), 3);
    (void)ranks.comms[1]->allreduce_sum_start(b.data(), 3);  // the last: the sum goes on its stream
    REQUIRE(a == std::vector<float>{1, 2, 3});              // not run yet
    ranks.comms[1]->abort();                                  // rank 1 failed
    CHECK(a == std::vector<float>{11, 22, 33});               // rank 0's memory may be freed now
    CHECK_THROWS_WITH(ranks.comms[0]->allreduce_sum_start(a.data(), 3), "stopped because another replica failed");
    ranks.comms.clear();
    CHECK(stale_stream_uses == 0);
}

TEST_CASE("Destroying a rank waits for the sums that write its buffer, whoever launched them") {
    reset_fakes();
    TwoRanks ranks(2);
    std::vector<float> a = {1, 2}, b = {3, 4};
    (void)ranks.comms[0]->allreduce_sum_start(a.data(), 2);
    (void)ranks.comms[1]->allreduce_sum_start(b.data(), 2);
    REQUIRE(a == std::vector<float>{1, 2});
    ranks.comms[0].reset();  // then replica 0's backend frees its memory
    CHECK(a == std::vector<float>{4, 6});
    ranks.comms[1].reset();
    CHECK(b == std::vector<float>{4, 6});
    CHECK(stale_stream_uses == 0);
}
