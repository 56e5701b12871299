#include "dist/hierarchical_communicator.hpp"

#include <algorithm>

#include "dist/abortable_barrier.hpp"

namespace gputrain::dist {

namespace {

// What the local replicas of one process share: where the first replica's
// globally reduced buffer is, and a barrier to hand it over.
struct Handover {
    explicit Handover(int local_size) : barrier(local_size) {}
    AbortableBarrier barrier;
    const float* floats = nullptr;
    const double* doubles = nullptr;
};

class HierarchicalCommunicator : public Communicator {
public:
    HierarchicalCommunicator(std::unique_ptr<Communicator> local, ProcessGroup& processes,
                             std::shared_ptr<Handover> handover)
        : local_(std::move(local)), processes_(processes), handover_(std::move(handover)) {}

    int rank() const override { return processes_.rank() * local_->size() + local_->rank(); }
    int size() const override { return processes_.size() * local_->size(); }

    void allreduce_sum(float* data, size_t count) override {
        local_->allreduce_sum(data, count);
        across_processes(data, count, handover_->floats);
    }

    void allreduce_sum_host(double* data, size_t count) override {
        local_->allreduce_sum_host(data, count);
        across_processes(data, count, handover_->doubles);
    }

    void barrier() override {
        double one = 1.0;
        allreduce_sum_host(&one, 1);
    }

    void abort() override {
        local_->abort();
        handover_->barrier.abort();
        processes_.cancel();
    }

private:
    // `data` holds this process's sum on every local replica; afterwards the global sum.
    template <typename T>
    void across_processes(T* data, size_t count, const T*& shared) {
        if (local_->rank() == 0) {
            processes_.allreduce_sum(data, count);
            shared = data;
        }
        if (local_->size() == 1) return;
        handover_->barrier.arrive_and_wait();  // the first replica's buffer holds the global sum
        if (local_->rank() != 0) std::copy(shared, shared + count, data);
        handover_->barrier.arrive_and_wait();  // the first replica may reuse its buffer
    }

    std::unique_ptr<Communicator> local_;
    ProcessGroup& processes_;
    std::shared_ptr<Handover> handover_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_hierarchical_communicators(
    std::vector<std::unique_ptr<Communicator>> local, ProcessGroup& processes) {
    require_same_replica_count(processes, static_cast<int>(local.size()));
    auto handover = std::make_shared<Handover>(static_cast<int>(local.size()));
    std::vector<std::unique_ptr<Communicator>> out;
    for (auto& comm : local)
        out.push_back(std::make_unique<HierarchicalCommunicator>(std::move(comm), processes, handover));
    return out;
}

}  // namespace gputrain::dist
