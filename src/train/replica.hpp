// Replica: what one replica thread owns: its Backend, its copy of the model,
// its optimizer, its rank in the communicator, and the device buffers for one
// shard of a batch and for the running loss/accuracy sums.
#pragma once

#include <memory>

#include "backend/backend.hpp"
#include "config/run_config.hpp"
#include "dist/communicator.hpp"
#include "nn/model.hpp"
#include "optim/optimizer.hpp"

namespace gputrain::train {

class Replica {
public:
    // Allocates everything the replica will need before any collective runs.
    Replica(const config::RunConfig& cfg, std::unique_ptr<Backend> backend,
            std::unique_ptr<dist::Communicator> comm, int64_t max_shard_rows);
    ~Replica();
    Replica(const Replica&) = delete;
    Replica& operator=(const Replica&) = delete;

    Backend& backend() { return *backend_; }
    nn::Model& model() { return *model_; }
    optim::Optimizer& optimizer() { return *optimizer_; }
    dist::Communicator& comm() { return *comm_; }
    int rank() const { return comm_->rank(); }
    // GPU replicas get their communicator after every replica has allocated its memory.
    void set_comm(std::unique_ptr<dist::Communicator> comm) { comm_ = std::move(comm); }

    // Copies rows [begin, end) of a host batch into the device shard buffers.
    void load_shard(const float* host_inputs, const int32_t* host_labels, int64_t begin, int64_t end);
    float* inputs() { return inputs_; }
    int32_t* labels() { return labels_; }

    // Device running sums: [loss sum, correct].
    float* stats() { return stats_; }
    void reset_stats();
    // Host copy of the stats.
    void read_stats(double& loss_sum, double& correct);

private:
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<dist::Communicator> comm_;
    std::unique_ptr<nn::Model> model_;
    std::unique_ptr<optim::Optimizer> optimizer_;
    int64_t sample_elements_;
    float* inputs_ = nullptr;
    int32_t* labels_ = nullptr;
    float* stats_ = nullptr;
};

}  // namespace gputrain::train
