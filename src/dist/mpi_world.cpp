// The MPI implementation of World. Collectives are nonblocking MPI calls
// polled with a deadline (MPI_Iallreduce + MPI_Test), so a worker that died or
// hangs turns into an error after strategy.timeout_seconds instead of a hang.
// Errors come back as return codes (MPI_ERRORS_RETURN), never as MPI's own abort.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "dist/mpi_world.hpp"

namespace gputrain::dist {

namespace {

std::string mpi_error_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    return std::string(text, static_cast<size_t>(length));
}

class MpiWorld final : public World {
public:
    explicit MpiWorld(double timeout_seconds) : timeout_seconds_(timeout_seconds) {
        int initialized = 0;
        MPI_Initialized(&initialized);
        if (initialized) throw Error("internal: MPI was initialized twice in one process");
        // Only one thread calls MPI at a time (the first replica's), but not
        // always the same one: SERIALIZED is the level that allows that.
        int provided = 0;
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
        if (provided < MPI_THREAD_SERIALIZED) {
            MPI_Finalize();
            throw Error("this MPI library does not support MPI_THREAD_SERIALIZED (it provides level " +
                        std::to_string(provided) + "); use an MPI built with thread support");
        }
        check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
        check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
        check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
        // The processes sharing this machine's memory: they share its GPUs too.
        MPI_Comm node = MPI_COMM_NULL;
        check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
        check(MPI_Comm_rank(node, &local_rank_), "MPI_Comm_rank");
        check(MPI_Comm_size(node, &local_size_), "MPI_Comm_size");
        MPI_Comm_free(&node);
    }

    ~MpiWorld() override {
        MPI_Comm_free(&comm_);
        MPI_Finalize();
    }

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    int local_rank() const override { return local_rank_; }
    int local_size() const override { return local_size_; }
    double timeout_seconds() const override { return timeout_seconds_; }

    void allreduce_sum(float* data, size_t count) override { allreduce(data, count, MPI_FLOAT); }
    void allreduce_sum(double* data, size_t count) override { allreduce(data, count, MPI_DOUBLE); }

    void broadcast(void* data, size_t bytes, int root) override {
        auto* p = static_cast<char*>(data);
        for (size_t done = 0; done < bytes; done += kMaxChunk) {
            const int n = static_cast<int>(std::min(kMaxChunk, bytes - done));
            MPI_Request request;
            check(MPI_Ibcast(p + done, n, MPI_BYTE, root, comm_, &request), "MPI_Ibcast");
            wait(request, "a broadcast");
        }
    }

    void cancel() override { cancelled_.store(true); }

    [[noreturn]] void abort_job(int exit_code) override {
        MPI_Abort(MPI_COMM_WORLD, exit_code);
        std::_Exit(exit_code);  // MPI_Abort does not return; this is in case an implementation does
    }

private:
    static constexpr size_t kMaxChunk = INT_MAX / 8;  // MPI counts are ints

    template <typename T>
    void allreduce(T* data, size_t count, MPI_Datatype type) {
        for (size_t done = 0; done < count; done += kMaxChunk) {
            const int n = static_cast<int>(std::min(kMaxChunk, count - done));
            MPI_Request request;
            check(MPI_Iallreduce(MPI_IN_PLACE, data + done, n, type, MPI_SUM, comm_, &request), "MPI_Iallreduce");
            wait(request, "an all-reduce");
        }
    }

    void wait(MPI_Request& request, const char* what) {
        using clock = std::chrono::steady_clock;
        const auto start = clock::now();
        const auto deadline = start + std::chrono::duration<double>(timeout_seconds_);
        for (;;) {
            int done = 0;
            check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
            if (done) return;
            if (cancelled_.load()) throw Error("stopped because another replica failed");
            const auto now = clock::now();
            if (now > deadline)
                throw Error("worker " + std::to_string(rank_) + " got no answer from the other workers for " +
                            std::to_string(static_cast<long long>(timeout_seconds_)) + " s in " + what +
                            " (strategy.timeout_seconds): another worker died, hangs or cannot be reached");
            // MPI progresses the collective inside MPI_Test: poll tightly at
            // first (a step's all-reduce is short), then back off.
            if (now - start < std::chrono::milliseconds(2))
                std::this_thread::yield();
            else
                std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }

    void check(int code, const char* call) const {
        if (code != MPI_SUCCESS)
            throw Error("worker " + std::to_string(rank_) + ": " + call + " failed: " + mpi_error_text(code));
    }

    double timeout_seconds_;
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
    std::atomic<bool> cancelled_{false};
};

}  // namespace

bool mpi_built() { return true; }

std::unique_ptr<World> join_mpi_world(double timeout_seconds) { return std::make_unique<MpiWorld>(timeout_seconds); }

}  // namespace gputrain::dist
