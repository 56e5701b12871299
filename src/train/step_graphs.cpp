#include "train/step_graphs.hpp"

#include <exception>

#include "dist/local_communicator.hpp"
#include "train/replica.hpp"

namespace gputrain::train {

std::string step_graphs_unusable(const config::RunConfig& cfg, Replica& replica) {
    if (!replica.backend().can_capture()) return "the " + replica.backend().name() + " backend runs each call directly";
    if (!cfg.training.cuda_graphs) return "training.cuda_graphs: false";
    if (cfg.training.accumulate_steps > 1) return "training.accumulate_steps > 1 (not recorded yet)";
    // One replica only: the device communicator waits on the host, and NCCL
    // warns that graphs holding its collectives can deadlock with several
    // GPUs in one process (its guide recommends one GPU per process).
    if (replica.comm().size() > 1)
        return std::to_string(replica.comm().size()) +
               " replicas (graphs are recorded for a single replica; NCCL advises one GPU per process with graphs)";
    // And only the in-process one-rank communicator, whose collectives do
    // nothing: a multi-worker run of one GPU in all still has an NCCL (or
    // process group) communicator, whose waits query events or block the
    // host, which a recording does not allow.
    if (!dynamic_cast<dist::LocalCommunicator*>(&replica.comm()))
        return "a communicator across worker processes (NCCL or MPI: its waits query events or block the host, "
               "which a recording does not allow)";
    return "";
}

std::string step_graphs_note(const config::RunConfig& cfg, Replica& replica) {
    const std::string why = step_graphs_unusable(cfg, replica);
    return why.empty() ? "on (each step shape is recorded once as a CUDA graph and replayed)" : "off: " + why;
}

size_t StepGraphs::first_graph_nodes() const {
    for (const Entry& e : entries_)
        if (e.graph >= 0) return backend_.graph_nodes(e.graph);
    return 0;
}

void StepGraphs::run(const Shape& shape, const std::function<void()>& step) {
    if (!enabled_) return step();
    Entry* entry = nullptr;
    for (Entry& e : entries_)
        if (e.shape == shape) entry = &e;
    if (!entry) {
        if (entries_.size() < kMaxShapes) entries_.push_back(Entry{shape, -1});
        return step();  // the first time: directly
    }
    if (entry->graph < 0) {
        backend_.begin_capture();
        try {
            step();
        } catch (const std::exception& e) {
            // A call the recording does not allow fails at once (and spoils
            // the recording): then end_capture fails too. Nothing recorded
            // ran, so run this step directly, and every step after it; an
            // error that has nothing to do with recording comes back there.
            // Else (the recording is intact) it is the step's own error.
            try {
                (void)backend_.end_capture();
            } catch (const Error&) {
                enabled_ = false;
                failure_ = e.what();
                return step();
            }
            throw;
        } catch (...) {
            try {
                (void)backend_.end_capture();
            } catch (...) {
            }
            throw;
        }
        try {
            entry->graph = backend_.end_capture();
        } catch (const Error& e) {
            // Nothing recorded ran: run this step directly, and every step after it.
            enabled_ = false;
            failure_ = e.what();
            return step();
        }
    }
    backend_.replay(entry->graph);
    ++replays_;
}

}  // namespace gputrain::train
