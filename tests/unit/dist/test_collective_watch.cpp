// CollectiveWatch: the stall watchdog of communicators whose waits block in
// CUDA (NCCL, the device communicator), tested here around LocalCommunicators
// (with no warning of their own) and through check() on a clock of the test's.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "captured_log.hpp"
#include "dist/collective_watch.hpp"
#include "dist/local_communicator.hpp"
#include "dist/stall_watch.hpp"

using namespace gputrain;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_log::CapturedLog;

namespace {

std::vector<std::string> three() { return {"replica 0 (cuda:0)", "replica 1 (cuda:1)", "replica 2 (cuda:2)"}; }

}  // namespace

TEST_CASE("CollectiveWatch names the replicas that have not issued a collective the others wait in, every interval") {
    dist::CollectiveWatch watch(three(), 1.0, 0, 1, /*thread=*/false);
    const Clock::time_point t0{};
    for (int i = 0; i < 3; ++i) watch.issued(i, "an all-reduce");
    REQUIRE(watch.check(t0).empty());
    watch.issued(0, "a host all-reduce");
    watch.issued(1, "a host all-reduce");
    dist::note_step(2, 5);
    REQUIRE(watch.check(t0 + 100ms).empty());  // the counts moved: the clock starts here
    REQUIRE(watch.check(t0 + 1000ms).empty());
    const std::string first = watch.check(t0 + 1200ms);
    CHECK(first ==
          "warning: stall: replica 0 (cuda:0) and replica 1 (cuda:1) have waited 1 s in a host all-reduce #2 (epoch 2, "
          "step 5); replica 2 (cuda:2) (at #1) has not arrived (still computing, stopped or hung)");
    REQUIRE(watch.check(t0 + 1500ms).empty());  // once an interval
    const std::string second = watch.check(t0 + 2200ms);
    CHECK(second.find("have waited 2 s in a host all-reduce #2") != std::string::npos);
    // Replica 2 arrives: no stall, whatever the time.
    watch.issued(2, "a host all-reduce");
    REQUIRE(watch.check(t0 + 2300ms).empty());
    REQUIRE(watch.check(t0 + 60s).empty());
    // Every replica waits for it on the host and it does not complete: in one process, the collective itself.
    for (int i = 0; i < 3; ++i) watch.wait_begins(i);
    REQUIRE(watch.check(t0 + 61s).empty());
    CHECK(watch.check(t0 + 62100ms) ==
          "warning: stall: every replica (replica 0 (cuda:0), replica 1 (cuda:1) and replica 2 (cuda:2)) has waited 1 "
          "s in a host all-reduce #2 (epoch 2, step 5), which has not completed: the collective itself hangs "
          "(NCCL_DEBUG=INFO shows what NCCL does)");
    watch.wait_ends(1);
    REQUIRE(watch.check(t0 + 63s).empty());
    REQUIRE(watch.check(t0 + 90s).empty());  // equal and not all waiting: between collectives
    dist::note_step(0, 0);
}

TEST_CASE("CollectiveWatch across workers: all of this worker's replicas waiting means another worker is missing") {
    dist::CollectiveWatch watch({"replica 2 (cuda:0)", "replica 3 (cuda:1)"}, 2.0, 1, 3, /*thread=*/false);
    const Clock::time_point t0{};
    watch.issued(0, "an all-reduce");
    watch.issued(1, "an all-reduce");
    watch.wait_begins(0);
    watch.wait_begins(1);
    REQUIRE(watch.check(t0).empty());
    REQUIRE(watch.check(t0 + 1900ms).empty());
    CHECK(watch.check(t0 + 2100ms) ==
          "warning: stall: every replica of worker 1 (replica 2 (cuda:0) and replica 3 (cuda:1)) has waited 2 s in an "
          "all-reduce #1 (outside a training step); a replica of another worker has not arrived (still computing, "
          "stopped, hung or gone): the workers that log no such line are the ones missing");
    // A replica of this worker behind the other: named, with the worker.
    watch.wait_ends(1);
    watch.issued(0, "a barrier");
    REQUIRE(watch.check(t0 + 3s).empty());
    CHECK(watch.check(t0 + 5100ms) ==
          "warning: stall: replica 2 (cuda:0) of worker 1 has waited 2 s in a barrier #2 (outside a training step); "
          "replica 3 (cuda:1) (at #1) has not arrived (still computing, stopped or hung)");
}

namespace {

// The other workers' answers as the test sets them; what this worker told them.
class FakePeers final : public dist::PeerChannel {
public:
    explicit FakePeers(std::vector<std::optional<dist::PeerState>>& answers) : answers_(answers) {}
    void answer(dist::PeerState mine) override { told.push_back(mine); }
    std::vector<std::optional<dist::PeerState>> ask(dist::PeerState mine, Clock::duration wait) override {
        told.push_back(mine);
        waits.push_back(wait);
        return answers_;
    }
    std::vector<dist::PeerState> told;
    std::vector<Clock::duration> waits;

private:
    std::vector<std::optional<dist::PeerState>>& answers_;
};

}  // namespace

TEST_CASE("CollectiveWatch across workers with a peer channel names the workers missing, behind and arrived") {
    std::vector<std::optional<dist::PeerState>> answers(4);
    auto peers = std::make_unique<FakePeers>(answers);
    FakePeers* fake = peers.get();
    dist::CollectiveWatch watch({"replica 2 (cuda:0)", "replica 3 (cuda:1)"}, 2.0, 1, 4, /*thread=*/false,
                                std::move(peers));
    const Clock::time_point t0{};
    for (int n = 0; n < 7; ++n) {
        watch.issued(0, "an all-reduce");
        watch.issued(1, "an all-reduce");
    }
    watch.wait_begins(0);
    CHECK(watch.state().issued == 7);
    CHECK_FALSE(watch.state().waiting);
    watch.wait_begins(1);
    CHECK(watch.state().waiting);
    dist::note_step(3, 9);
    // Worker 0 waits in #7 as well, worker 2 is at #6 (computing), worker 3 does not answer.
    answers[0] = dist::PeerState{7, true};
    answers[2] = dist::PeerState{6, false};
    REQUIRE(watch.check(t0).empty());
    REQUIRE(watch.check(t0 + 1900ms).empty());
    CHECK(fake->waits.empty());  // nobody is asked before a line is due
    CHECK(watch.check(t0 + 2100ms) ==
          "warning: stall: every replica of worker 1 (replica 2 (cuda:0) and replica 3 (cuda:1)) has waited 2 s in an "
          "all-reduce #7 (epoch 3, step 9); not arrived: worker 2 (at #6: still computing or hung) and worker 3 (no "
          "answer: stopped, hung or gone); arrived: worker 0 (#7)");
    REQUIRE(fake->waits.size() == 1);
    CHECK(fake->waits[0] == std::chrono::duration_cast<Clock::duration>(1s));  // half the interval, a second at most
    CHECK(fake->told.back().issued == 7);
    CHECK(fake->told.back().waiting);
    // Every other worker has issued #7 (one of them enqueued it and is not waiting on its host): the collective hangs.
    answers[2] = dist::PeerState{7, true};
    answers[3] = dist::PeerState{8, false};
    CHECK(watch.check(t0 + 4100ms) ==
          "warning: stall: every replica of worker 1 (replica 2 (cuda:0) and replica 3 (cuda:1)) has waited 4 s in an "
          "all-reduce #7 (epoch 3, step 9); every other worker has arrived (worker 0 (#7), worker 2 (#7) and worker 3 "
          "(#8, not waiting)): the collective itself hangs (NCCL_DEBUG=INFO shows what NCCL does)");
    dist::note_step(0, 0);
}

namespace {

// An all-reduce that gives up after `after`, as NCCL's does at strategy.timeout_seconds.
class TimingOut final : public dist::Communicator {
public:
    explicit TimingOut(Clock::duration after) : after_(after) {}
    int rank() const override { return 0; }
    int size() const override { return 2; }
    void allreduce_sum(float*, size_t) override {
        std::this_thread::sleep_for(after_);
        throw dist::CollectiveTimeout("replica 1 (cuda:0): an NCCL all-reduce did not finish within 300 s "
                                      "(strategy.timeout_seconds): a worker died, hangs or cannot be reached");
    }
    void allreduce_sum_host(double*, size_t) override {}
    void barrier() override {}
    void abort() override {}

private:
    Clock::duration after_;
};

}  // namespace

TEST_CASE("A watched collective's timeout error says what the watch last saw of the other workers") {
    std::vector<std::optional<dist::PeerState>> answers(2);  // worker 0 does not answer
    std::vector<std::unique_ptr<dist::Communicator>> one;
    one.push_back(std::make_unique<TimingOut>(1500ms));
    CapturedLog log;
    auto comms = dist::watch_communicators(std::move(one), {"replica 1 (cuda:0)"}, 0.2, 1, 2,
                                           std::make_unique<FakePeers>(answers));
    float x = 0;
    std::string error;
    try {
        comms[0]->allreduce_sum(&x, 1);
    } catch (const dist::CollectiveTimeout& e) {
        error = e.what();
    }
    CHECK(error ==
          "replica 1 (cuda:0): an NCCL all-reduce did not finish within 300 s (strategy.timeout_seconds): a worker "
          "died, hangs or cannot be reached; the stall watchdog last saw: not arrived: worker 0 (no answer: stopped, "
          "hung or gone)");
    CHECK_FALSE(log.lines().empty());
    // Without a look at the other workers (no channel) the error is NCCL's alone.
    std::vector<std::unique_ptr<dist::Communicator>> two;
    two.push_back(std::make_unique<TimingOut>(300ms));
    comms = dist::watch_communicators(std::move(two), {"replica 1 (cuda:0)"}, 0.2, 1, 2);
    error.clear();
    try {
        comms[0]->allreduce_sum(&x, 1);
    } catch (const dist::CollectiveTimeout& e) {
        error = e.what();
    }
    CHECK(error.find("reached; the stall") == std::string::npos);
    CHECK(error.rfind("replica 1 (cuda:0): an NCCL all-reduce did not finish", 0) == 0);
}

TEST_CASE("Watched communicators: replicas waiting in an all-reduce name the one that has not arrived; the sum is right") {
    constexpr int kRanks = 3;
    std::vector<std::string> names = {"replica 0 (cpu)", "replica 1 (cpu)", "replica 2 (cpu)"};
    auto comms = dist::watch_communicators(dist::make_local_communicators(kRanks), names, 1.0);
    std::vector<std::vector<float>> buffers(kRanks, std::vector<float>(100));
    std::vector<CapturedLog::Line> lines;
    const auto start = Clock::now();
    {
        CapturedLog log;
        std::vector<std::thread> threads;
        for (int r = 0; r < kRanks; ++r)
            threads.emplace_back([&, r] {
                auto& buf = buffers[static_cast<size_t>(r)];
                for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(r + 1) * static_cast<float>(i);
                if (r == 2) std::this_thread::sleep_for(2500ms);
                double one = 1.0;
                comms[static_cast<size_t>(r)]->allreduce_sum_host(&one, 1);  // collective #1
                comms[static_cast<size_t>(r)]->allreduce_sum(buf.data(), buf.size());
            });
        for (auto& t : threads) t.join();
        lines = log.lines();
    }
    REQUIRE(!lines.empty());
    CHECK(lines.size() <= 2);
    CHECK(lines.front().at - start < 2s);  // within two intervals
    for (const auto& line : lines) {
        INFO(line.text);
        CHECK(line.text.find("warning: stall: replica 0 (cpu) and replica 1 (cpu) have waited ") == 0);
        CHECK(line.text.find(" s in a host all-reduce #1 (outside a training step); replica 2 (cpu) (at #0) has not "
                             "arrived (still computing, stopped or hung)") != std::string::npos);
    }
    for (size_t i = 0; i < 100; ++i)
        for (int r = 0; r < kRanks; ++r) REQUIRE(buffers[static_cast<size_t>(r)][i] == 6.0f * static_cast<float>(i));
}

TEST_CASE("Watched communicators: a run of collectives with no stall logs nothing") {
    constexpr int kRanks = 3;
    auto comms = dist::watch_communicators(dist::make_local_communicators(kRanks),
                                           {"replica 0 (cpu)", "replica 1 (cpu)", "replica 2 (cpu)"}, 1.0);
    CapturedLog log;
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
        threads.emplace_back([&, r] {
            std::vector<float> buf(1000, 1.0f);
            for (int round = 0; round < 300; ++round) {
                const auto pending = comms[static_cast<size_t>(r)]->allreduce_sum_start(buf.data(), buf.size());
                comms[static_cast<size_t>(r)]->allreduce_wait(pending);
                comms[static_cast<size_t>(r)]->barrier();
            }
        });
    for (auto& t : threads) t.join();
    CHECK(log.lines().empty());
}

TEST_CASE("watch_communicators leaves one replica of one process, or no interval, unwatched") {
    auto one = dist::make_local_communicators(1);
    const auto* raw = one[0].get();
    one = dist::watch_communicators(std::move(one), {"replica 0 (cuda:0)"}, 60.0);
    CHECK(one[0].get() == raw);
    auto two = dist::make_local_communicators(2);
    const auto* first = two[0].get();
    two = dist::watch_communicators(std::move(two), {"a", "b"}, 0.0);
    CHECK(two[0].get() == first);
}
