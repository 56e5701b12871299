// The replica communicator seen through nn::CrossReplica, the one collective
// layers may call (sync batch norm). nn/ does not depend on dist/; this
// adapter is how the trainer hands a layer the group.
#pragma once

#include "dist/communicator.hpp"
#include "nn/layer.hpp"

namespace gputrain::train {

class CrossReplicaComm : public nn::CrossReplica {
public:
    explicit CrossReplicaComm(dist::Communicator& comm) : comm_(comm) {}
    void allreduce_sum(float* device_data, size_t count) override { comm_.allreduce_sum(device_data, count); }

private:
    dist::Communicator& comm_;
};

}  // namespace gputrain::train
