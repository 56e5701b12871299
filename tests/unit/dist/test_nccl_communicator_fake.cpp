// NcclCommunicator's abort, timeout and host-copy paths, on the CPU: this file
// defines the CUDA runtime and NCCL functions the communicator calls (only
// their headers are used: no GPU, no libcudart, no libnccl). The fake NCCL
// notes two calls on one communicator at once (NCCL allows one thread at a
// time) and any call after ncclCommAbort (which frees the communicator); the
// fake copies note whether the host side is pinned. The real NCCL is tested on
// a GPU only (tests/gpu).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "dist/nccl_communicator.hpp"
#include "fake_cuda_common.hpp"

using namespace gputrain;
using namespace std::chrono_literals;

// The fake communicator: NCCL declares the type and never defines it.
struct ncclComm {
    std::atomic<int> inside{0};             // NCCL calls in progress on it
    std::atomic<int> overlaps{0};           // calls that began while another was in progress
    std::atomic<int> calls_after_abort{0};  // calls on the freed communicator
    std::atomic<int> aborts{0};
    std::atomic<bool> freed{false};
    ncclResult_t all_reduce_result = ncclSuccess;  // ncclInProgress: a nonblocking call still being issued
    ncclResult_t async_state = ncclSuccess;
    double scale = 1;  // the all-reduce multiplies by it: `scale` ranks holding the same data
};

namespace {

std::mutex fakes_mutex;
std::set<void*> pinned;                   // cudaHostAlloc's blocks
std::atomic<int> pinned_copies{0}, pageable_copies{0};
std::atomic<bool> events_complete{true};  // cudaEventQuery: done, or not ready
std::atomic<ncclComm*> hang_until_abort{nullptr};  // cudaStreamSynchronize waits for its abort

void reset_fakes() {
    pinned_copies = 0;
    pageable_copies = 0;
    events_complete = true;
    hang_until_abort = nullptr;
}

// Each NCCL call takes a little while, so that one overlapping it is likely to be caught.
struct InNccl {
    explicit InNccl(ncclComm* c) : comm(c) {
        if (comm->freed.load()) ++comm->calls_after_abort;
        if (comm->inside.fetch_add(1) != 0) ++comm->overlaps;
        std::this_thread::sleep_for(100us);
    }
    ~InNccl() { comm->inside.fetch_sub(1); }
    ncclComm* comm;
};

template <typename T>
void scale_in_place(const void* send, void* recv, size_t count, double scale) {
    for (size_t i = 0; i < count; ++i)
        static_cast<T*>(recv)[i] = static_cast<T>(static_cast<const T*>(send)[i] * scale);
}

cudaStream_t fake_stream() {
    static char stream;
    return reinterpret_cast<cudaStream_t>(&stream);
}

std::unique_ptr<dist::Communicator> communicator(ncclComm& fake, double timeout_seconds) {
    return dist::make_nccl_communicator(&fake, fake_stream(), /*rank=*/3, /*size=*/4, /*device=*/1, timeout_seconds);
}

// After the rank's communicator is gone: aborted exactly once, no NCCL call
// overlapping another, none on the freed communicator.
void check_aborted_once(std::unique_ptr<dist::Communicator>& comm, const ncclComm& fake) {
    comm.reset();
    CHECK(fake.aborts == 1);
    CHECK(fake.overlaps == 0);
    CHECK(fake.calls_after_abort == 0);
}

// Runs `collective` on another thread (the rank's owner), aborts from this
// one while it waits, and returns what the owner threw ("" for nothing).
template <typename Collective>
std::string abort_while_waiting(dist::Communicator& comm, Collective collective) {
    std::string error;
    std::thread owner([&] {
        try {
            collective();
        } catch (const Error& e) {
            error = e.what();
        }
    });
    std::this_thread::sleep_for(50ms);
    comm.abort();
    owner.join();
    return error;
}

}  // namespace

// The CUDA runtime, as far as the communicator uses it.
const char* cudaGetErrorString(cudaError_t) { return "fake CUDA error"; }
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
    *p = std::malloc(bytes);
    std::lock_guard<std::mutex> lock(fakes_mutex);
    pinned.insert(*p);
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) {
    {
        std::lock_guard<std::mutex> lock(fakes_mutex);
        pinned.erase(p);
    }
    std::free(p);
    return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t) { return events_complete.load() ? cudaSuccess : cudaErrorNotReady; }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int, int) {
    *s = reinterpret_cast<cudaStream_t>(new char);
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    delete reinterpret_cast<char*>(s);
    return cudaSuccess;
}
// An NCCL kernel that never finishes until its communicator is aborted.
cudaError_t cudaStreamSynchronize(cudaStream_t) {
    if (ncclComm* c = hang_until_abort.load())
        while (!c->freed.load()) std::this_thread::sleep_for(1ms);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
    {
        std::lock_guard<std::mutex> lock(fakes_mutex);
        const void* host = kind == cudaMemcpyHostToDevice ? src : dst;
        if (pinned.count(const_cast<void*>(host)))
            ++pinned_copies;
        else
            ++pageable_copies;
    }
    std::memcpy(dst, src, bytes);
    return cudaSuccess;
}

// NCCL, as far as the communicator uses it.
const char* ncclGetErrorString(ncclResult_t) { return "fake NCCL error"; }
ncclResult_t ncclCommInitAll(ncclComm_t*, int, const int*) { return ncclInvalidUsage; }
ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t,
                           ncclComm_t comm, cudaStream_t) {
    InNccl in(comm);
    if (type == ncclDouble) scale_in_place<double>(send, recv, count, comm->scale);
    if (type == ncclFloat) scale_in_place<float>(send, recv, count, comm->scale);
    return comm->all_reduce_result;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
    InNccl in(comm);
    *state = comm->async_state;
    return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
    {
        InNccl in(comm);
        ++comm->aborts;
    }
    comm->freed = true;
    return ncclSuccess;
}
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    InNccl in(comm);
    return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    InNccl in(comm);
    comm->freed = true;
    return ncclSuccess;
}

TEST_CASE("An abort from another thread stops a rank polling its all-reduce; no NCCL call overlaps or follows it") {
    reset_fakes();
    ncclComm fake;
    events_complete = false;  // the all-reduce never finishes: a peer is gone
    auto comm = communicator(fake, /*timeout_seconds=*/60);
    std::vector<float> data(8, 1.0f);
    const std::string error = abort_while_waiting(*comm, [&] { comm->allreduce_sum(data.data(), data.size()); });
    CHECK(error == "stopped because another replica failed");
    check_aborted_once(comm, fake);
}

TEST_CASE("An abort stops a rank whose all-reduce NCCL is still issuing (nonblocking communicator)") {
    reset_fakes();
    ncclComm fake;
    fake.all_reduce_result = ncclInProgress;
    fake.async_state = ncclInProgress;  // never connects
    auto comm = communicator(fake, /*timeout_seconds=*/60);
    std::vector<float> data(8, 1.0f);
    const std::string error =
        abort_while_waiting(*comm, [&] { (void)comm->allreduce_sum_start(data.data(), data.size()); });
    CHECK(error == "stopped because another replica failed");
    check_aborted_once(comm, fake);
}

TEST_CASE("Without a timeout, an abort releases a rank blocked in its stream synchronisation") {
    reset_fakes();
    ncclComm fake;
    hang_until_abort = &fake;
    auto comm = communicator(fake, /*timeout_seconds=*/0);
    double sums[3] = {1, 2, 3};
    const std::string error = abort_while_waiting(*comm, [&] { comm->allreduce_sum_host(sums, 3); });
    CHECK(error == "stopped because another replica failed");  // its sum is incomplete: no result
    check_aborted_once(comm, fake);
}

TEST_CASE("After an abort, every collective throws without calling NCCL") {
    reset_fakes();
    ncclComm fake;
    auto comm = communicator(fake, /*timeout_seconds=*/60);
    std::vector<float> data(8, 1.0f);
    const auto started = comm->allreduce_sum_start(data.data(), data.size());
    comm->abort();
    comm->abort();  // a second abort (every failing path may call it) does nothing
    const std::string stopped = "stopped because another replica failed";
    CHECK_THROWS_WITH(comm->allreduce_wait(started), stopped);
    CHECK_THROWS_WITH(comm->allreduce_sum_start(data.data(), data.size()), stopped);
    CHECK_THROWS_WITH(comm->allreduce_sum(data.data(), data.size()), stopped);
    double sum = 1;
    CHECK_THROWS_WITH(comm->allreduce_sum_host(&sum, 1), stopped);
    CHECK_THROWS_WITH(comm->barrier(), stopped);
    check_aborted_once(comm, fake);
}

TEST_CASE("A host all-reduce copies through pinned memory, chunk by chunk") {
    reset_fakes();
    ncclComm fake;
    fake.scale = 2;  // as two ranks holding the same values
    auto comm = communicator(fake, /*timeout_seconds=*/60);
    std::vector<double> sums(100);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] = static_cast<double>(i) + 0.5;
    comm->allreduce_sum_host(sums.data(), sums.size());
    for (size_t i = 0; i < sums.size(); ++i) CHECK(sums[i] == 2 * (static_cast<double>(i) + 0.5));
    CHECK(pinned_copies == 4);  // 64 + 36 doubles: in and out for each chunk
    CHECK(pageable_copies == 0);
    comm->barrier();
    CHECK(pageable_copies == 0);
    comm.reset();
    CHECK(fake.aborts == 0);  // finalised and destroyed
    CHECK(fake.overlaps == 0);
}

TEST_CASE("A host all-reduce that never finishes times out instead of hanging") {
    reset_fakes();
    ncclComm fake;
    events_complete = false;
    auto comm = communicator(fake, /*timeout_seconds=*/1);
    double sums[2] = {1, 2};
    CHECK_THROWS_WITH(comm->allreduce_sum_host(sums, 2),
                      "replica 3 (cuda:1): an NCCL all-reduce did not finish within 1 s (strategy.timeout_seconds): "
                      "a worker died, hangs or cannot be reached");
    CHECK(pageable_copies == 0);
    check_aborted_once(comm, fake);  // the timeout aborted the communicator
}
