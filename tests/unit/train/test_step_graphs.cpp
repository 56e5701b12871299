// StepGraphs' schedule (direct, then recorded, then replayed, per shape) and
// its failure paths, on a CPU backend that logs the graph calls it is given;
// the real recording is tested on a GPU (tests/gpu/test_cuda_guarded.cpp).
// Which replicas may use graphs, on that backend with the communicators a
// run can give them.
#include <memory>
#include <string>
#include <vector>

#include "../dist/fake_processes.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"
#include "dist/hierarchical_communicator.hpp"
#include "dist/local_communicator.hpp"
#include "train/replica.hpp"
#include "train/step_graphs.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

class LoggingBackend : public CpuBackend {
public:
    bool can_capture() const override { return true; }
    void begin_capture() override {
        log.push_back("begin");
        capturing = true;
    }
    int end_capture() override {
        log.push_back("end");
        capturing = false;
        if (fail_end) throw Error("cannot record: " + std::string("test"));
        return graphs++;
    }
    void replay(int graph) override { log.push_back("replay " + std::to_string(graph)); }

    std::vector<std::string> log;
    bool fail_end = false;
    bool capturing = false;
    int graphs = 0;
};

const train::StepGraphs::Shape kFull{16, 32, reinterpret_cast<const void*>(0x1000), nullptr};
const train::StepGraphs::Shape kLast{5, 21, reinterpret_cast<const void*>(0x1000), nullptr};

}  // namespace

TEST_CASE("Each step shape runs directly once, is recorded the second time, then replayed") {
    LoggingBackend be;
    train::StepGraphs graphs(be, true);
    int ran = 0;
    const auto step = [&] { ++ran; };
    for (int i = 0; i < 4; ++i) graphs.run(kFull, step);
    graphs.run(kLast, step);
    graphs.run(kLast, step);
    graphs.run(kFull, step);
    CHECK(ran == 4);  // kFull: direct + recorded; kLast: the same
    CHECK(be.log == std::vector<std::string>{"begin", "end", "replay 0", "replay 0", "replay 0", "begin", "end",
                                             "replay 1", "replay 0"});
    CHECK(graphs.replays() == 5);
}

TEST_CASE("Disabled step graphs run every step directly") {
    LoggingBackend be;
    train::StepGraphs graphs(be, false);
    int ran = 0;
    for (int i = 0; i < 3; ++i) graphs.run(kFull, [&] { ++ran; });
    CHECK(ran == 3);
    CHECK(be.log.empty());
}

TEST_CASE("A step that cannot be recorded runs directly, and graphs stay off") {
    LoggingBackend be;
    be.fail_end = true;
    train::StepGraphs graphs(be, true);
    int ran = 0;
    for (int i = 0; i < 4; ++i) graphs.run(kFull, [&] { ++ran; });
    CHECK(ran == 5);  // direct, recorded (lost), again directly, then two more directly
    CHECK(be.log == std::vector<std::string>{"begin", "end"});
    CHECK_FALSE(graphs.enabled());
    CHECK(graphs.failure() == "cannot record: test");
}

TEST_CASE("A call that fails only while recording turns graphs off, and the step runs directly") {
    LoggingBackend be;
    train::StepGraphs graphs(be, true);
    int ran = 0;
    const auto step = [&] {
        ++ran;
        if (be.capturing) {  // as a CUDA call not allowed in a capture: it fails and spoils the recording
            be.fail_end = true;
            throw Error("cuda:0: cudaStreamSynchronize(stream_) failed: operation not permitted when stream is capturing");
        }
    };
    graphs.run(kFull, step);
    graphs.run(kFull, step);  // recorded: fails, then runs directly
    graphs.run(kFull, step);
    CHECK(ran == 4);
    CHECK_FALSE(graphs.enabled());
    CHECK(graphs.failure() ==
          "cuda:0: cudaStreamSynchronize(stream_) failed: operation not permitted when stream is capturing");
    CHECK(be.log == std::vector<std::string>{"begin", "end"});
}

TEST_CASE("An error inside a recorded step ends the recording and reaches the caller") {
    LoggingBackend be;
    train::StepGraphs graphs(be, true);
    graphs.run(kFull, [] {});
    REQUIRE_THROWS_WITH(graphs.run(kFull, [] { throw Error("out of memory"); }), "out of memory");
    CHECK(be.log == std::vector<std::string>{"begin", "end"});
}

TEST_CASE("On the CPU, step graphs are off and say why") {
    const auto cfg = fixture::small_job(1, 8);
    auto reps = fixture::replicas(cfg, 1);
    CHECK(train::step_graphs_unusable(cfg, *reps[0]) == "the cpu backend runs each call directly");
    CHECK(train::step_graphs_note(cfg, *reps[0]) == "off: the cpu backend runs each call directly");
}

namespace {

// A replica whose backend can record, with `comm`.
std::unique_ptr<train::Replica> recording_replica(const config::RunConfig& cfg,
                                                  std::unique_ptr<dist::Communicator> comm) {
    return std::make_unique<train::Replica>(cfg, std::make_unique<LoggingBackend>(), std::move(comm),
                                            cfg.training.batch_size);
}

}  // namespace

TEST_CASE("Step graphs are on for the one in-process replica of a run") {
    const auto cfg = fixture::small_job(1, 8);
    auto replica = recording_replica(cfg, std::move(dist::make_local_communicators(1)[0]));
    CHECK(train::step_graphs_unusable(cfg, *replica).empty());
    CHECK(train::step_graphs_note(cfg, *replica) == "on (each step shape is recorded once as a CUDA graph and replayed)");
}

TEST_CASE("Step graphs are off for several replicas and say how many") {
    const auto cfg = fixture::small_job(1, 8);
    auto comms = dist::make_local_communicators(2);
    auto replica = recording_replica(cfg, std::move(comms[0]));
    CHECK(train::step_graphs_unusable(cfg, *replica) ==
          "2 replicas (graphs are recorded for a single replica; NCCL advises one GPU per process with graphs)");
}

TEST_CASE("Step graphs are off for a multi-worker run even when its world has one replica") {
    // One worker process of one replica: the communicator has size 1, as an
    // NCCL world of one GPU would, but its collectives go through the process
    // group (host waits), which a recording cannot hold.
    const auto cfg = fixture::small_job(1, 8);
    auto processes = fake::make_processes(1);
    auto comms = dist::make_hierarchical_communicators(dist::make_local_communicators(1), *processes[0]);
    REQUIRE(comms[0]->size() == 1);
    auto replica = recording_replica(cfg, std::move(comms[0]));
    const std::string why =
        "a communicator across worker processes (NCCL or MPI: its waits query events or block the host, which a "
        "recording does not allow)";
    CHECK(train::step_graphs_unusable(cfg, *replica) == why);
    CHECK(train::step_graphs_note(cfg, *replica) == "off: " + why);
}
