// StepGraphs: one replica's training step recorded once per shape as a graph
// (CUDA graphs on a GPU) and replayed, so that a step costs one launch on the
// host instead of one per kernel (training.cuda_graphs).
//
// What a step queues must then be the same from step to step for the same
// shape: the same buffers, the same kernel arguments. The per-step values live
// in backend memory instead (the optimizer's scalars, Optimizer::prepare;
// dropout's mask key, Layer::prepare_step; the finite flag, StepGuard), written
// before the replay, as the batch is gathered or copied into the replica's
// shard buffers before it. A step shape is the shard's rows,
// the global batch (the loss scale) and the shard buffers (two in turn while
// copies are staged ahead): a few per run.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "config/run_config.hpp"

namespace gputrain::train {

class Replica;

// Why `replica`'s steps cannot be replayed as graphs, or "" when they can.
std::string step_graphs_unusable(const config::RunConfig& cfg, Replica& replica);
// One line for the log: "on (...)" or "off: <why>".
std::string step_graphs_note(const config::RunConfig& cfg, Replica& replica);

class StepGraphs {
public:
    struct Shape {
        int64_t rows = 0, global_batch = 0;
        const void* inputs = nullptr;
        const void* labels = nullptr;
        bool operator==(const Shape&) const = default;
    };

    // Graphs are used when `enabled` (step_graphs_unusable said "").
    StepGraphs(Backend& backend, bool enabled) : backend_(backend), enabled_(enabled) {}

    // Queues one step (`step` queues its work on the backend): the first
    // time a shape is seen directly (first calls may set things up: cuBLAS
    // and cuDNN pick kernels, modules load), the second time recorded, then
    // replayed, and replayed from then on. If recording fails (a call fails
    // while recording, or end_capture does), graphs are off for the rest of
    // the run (failure() says why) and the step runs directly.
    void run(const Shape& shape, const std::function<void()>& step);

    void set_enabled(bool enabled) { enabled_ = enabled; }
    // Forgets every recorded shape, so that each is recorded again: their
    // graphs hold pointers to memory that is about to go (a resident training
    // set replaced by the next fit). The backend keeps the graphs until it goes.
    void forget() { entries_.clear(); }
    bool enabled() const { return enabled_; }
    const std::string& failure() const { return failure_; }
    int64_t replays() const { return replays_; }
    // Operations in the graph of the first shape recorded (a full batch's
    // step; 0 before any recording, or if the backend cannot say).
    size_t first_graph_nodes() const;

private:
    struct Entry {
        Shape shape;
        int graph = -1;  // -1: seen once, not yet recorded
    };
    static constexpr size_t kMaxShapes = 16;  // more: the rest run directly

    Backend& backend_;
    bool enabled_;
    std::string failure_;
    std::vector<Entry> entries_;
    int64_t replays_ = 0;
};

}  // namespace gputrain::train
