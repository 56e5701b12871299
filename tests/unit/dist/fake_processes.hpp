// FakeProcesses: several "worker processes" inside one test process, for the
// multi-worker code paths without MPI. Each fake process is a ProcessGroup
// handle; their collectives go through a LocalCommunicator over the process
// ranks (rank-order sums, like a deterministic MPI_Allreduce), so threads that
// play different processes can run the real hierarchical communicators and trainers.
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include "dist/local_communicator.hpp"
#include "dist/process_group.hpp"

namespace fake {

using namespace gputrain;

class FakeProcess : public dist::ProcessGroup {
public:
    FakeProcess(std::unique_ptr<dist::Communicator> comm, std::shared_ptr<std::vector<char>> staging)
        : comm_(std::move(comm)), staging_(std::move(staging)) {}
    int rank() const override { return comm_->rank(); }
    int size() const override { return comm_->size(); }
    int local_rank() const override { return comm_->rank(); }
    int local_size() const override { return comm_->size(); }
    double timeout_seconds() const override { return 5; }
    void allreduce_sum(float* data, size_t count) override { comm_->allreduce_sum(data, count); }
    void allreduce_sum(double* data, size_t count) override { comm_->allreduce_sum_host(data, count); }
    void broadcast(void* data, size_t bytes, int root) override {
        if (rank() == root) *staging_ = std::vector<char>(static_cast<char*>(data), static_cast<char*>(data) + bytes);
        comm_->barrier();
        if (rank() != root) std::memcpy(data, staging_->data(), bytes);
        comm_->barrier();
    }
    void cancel() override { comm_->abort(); }

private:
    std::unique_ptr<dist::Communicator> comm_;
    std::shared_ptr<std::vector<char>> staging_;
};

// `count` fake processes, process rank i at index i.
inline std::vector<std::unique_ptr<FakeProcess>> make_processes(int count) {
    auto comms = dist::make_local_communicators(count);
    auto staging = std::make_shared<std::vector<char>>();
    std::vector<std::unique_ptr<FakeProcess>> out;
    for (auto& c : comms) out.push_back(std::make_unique<FakeProcess>(std::move(c), staging));
    return out;
}

}  // namespace fake
