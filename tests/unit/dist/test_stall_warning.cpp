// LocalCommunicator's stall warning (strategy.stall_warning_seconds for the
// replica threads of one process): a rank waiting in a collective longer than
// the interval logs which collective, the step, and which replicas have and
// have not arrived, every interval, and the collective still completes.
// Three ranks, a 1 s interval; rank 2 joins 2.5 s late.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "captured_log.hpp"
#include "dist/local_communicator.hpp"
#include "dist/stall_watch.hpp"

using namespace gputrain;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_log::CapturedLog;

namespace {

template <typename F>
void on_ranks(int size, F fn) {
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) threads.emplace_back(fn, r);
    for (auto& t : threads) t.join();
}

constexpr int kRanks = 3;
constexpr double kInterval = 1.0;
constexpr auto kLate = 2500ms;  // rank 2's delay

// Ranks 0 and 1 run `collective` at once, rank 2 after kLate; then checks the
// warnings: one or two per waiting rank (at 1 s and 2 s), none from rank 2,
// each naming `what`, the step, replicas 0 and 1 as arrived and 2 as not; the
// first within two intervals.
template <typename Collective>
void check_stall_warnings(const std::string& what, Collective collective) {
    auto comms = dist::make_local_communicators(kRanks, kInterval);
    dist::note_step(1, 17);
    std::vector<std::string> lines;
    Clock::time_point start;
    {
        CapturedLog log;
        start = Clock::now();
        on_ranks(kRanks, [&](int rank) {
            if (rank == 2) std::this_thread::sleep_for(kLate);
            collective(*comms[rank], rank);
        });
        for (const auto& line : log.lines()) lines.push_back(line.text);
        REQUIRE(!log.lines().empty());
        CHECK(log.lines().front().at - start < std::chrono::duration<double>(2 * kInterval));
    }
    dist::note_step(0, 0);
    int from[kRanks] = {0, 0, 0};
    for (const std::string& line : lines) {
        INFO(line);
        const std::string tail = " in " + what + " (epoch 1, step 17); replicas 0, 1 arrived, replica 2 has not";
        bool matched = false;
        for (int r = 0; r < kRanks; ++r) {
            for (int s : {1, 2}) {
                const std::string expected =
                    "warning: stall: replica " + std::to_string(r) + " has waited " + std::to_string(s) + " s" + tail;
                if (line.rfind(expected, 0) == 0) {
                    matched = true;
                    ++from[r];
                }
            }
        }
        CHECK(matched);
    }
    CHECK(from[0] >= 1);
    CHECK(from[0] <= 2);
    CHECK(from[1] >= 1);
    CHECK(from[1] <= 2);
    CHECK(from[2] == 0);
}

float value(int rank, size_t i) { return 0.25f * static_cast<float>(rank + 1) + 0.001f * static_cast<float>(i % 1000); }

}  // namespace

TEST_CASE("Stall warning: ranks waiting in an all-reduce name the replica that has not arrived; the sum is right") {
    const size_t length = 1000;
    std::vector<std::vector<float>> buffers(kRanks);
    check_stall_warnings("an all-reduce", [&](dist::Communicator& comm, int rank) {
        auto& buf = buffers[static_cast<size_t>(rank)];
        for (size_t i = 0; i < length; ++i) buf.push_back(value(rank, i));
        comm.allreduce_sum(buf.data(), length);
    });
    for (size_t i = 0; i < length; ++i) {
        const float expected = value(0, i) + value(1, i) + value(2, i);
        for (int r = 0; r < kRanks; ++r) REQUIRE(buffers[static_cast<size_t>(r)][i] == expected);
    }
}

TEST_CASE("Stall warning: a host all-reduce and a barrier name the missing replica too") {
    std::vector<double> sums(kRanks, 0);
    check_stall_warnings("a host all-reduce", [&](dist::Communicator& comm, int rank) {
        double d[2] = {static_cast<double>(rank), 1.0};
        comm.allreduce_sum_host(d, 2);
        sums[static_cast<size_t>(rank)] = d[0] + 10 * d[1];
    });
    CHECK(sums == std::vector<double>(kRanks, 3.0 + 30.0));
    check_stall_warnings("a barrier", [](dist::Communicator& comm, int) { comm.barrier(); });
}

TEST_CASE("Stall warning: waiting for an asynchronous all-reduce names the replica that has not started it") {
    const size_t length = 2 * 8192 + 77;  // three chunks
    std::vector<std::vector<float>> buffers(kRanks, std::vector<float>(length));
    std::vector<std::optional<bool>> finite(kRanks);
    check_stall_warnings("asynchronous all-reduce #0", [&](dist::Communicator& comm, int rank) {
        auto& buf = buffers[static_cast<size_t>(rank)];
        for (size_t i = 0; i < length; ++i) buf[i] = value(rank, i);
        const auto pending = comm.allreduce_sum_start(buf.data(), length);
        finite[static_cast<size_t>(rank)] = comm.allreduce_wait_finite(pending);
    });
    for (int r = 0; r < kRanks; ++r) REQUIRE(finite[static_cast<size_t>(r)] == std::optional<bool>(true));
    for (size_t i = 0; i < length; ++i) {
        const float expected = value(0, i) + value(1, i) + value(2, i);
        for (int r = 0; r < kRanks; ++r) REQUIRE(buffers[static_cast<size_t>(r)][i] == expected);
    }
}

TEST_CASE("Stall warning: a start waiting for its slot names the replica that has not waited for the slot's last use") {
    // 256 slots: every rank starts all-reduces #0..#255 at once; ranks 0 and 1
    // wait for #0 and start #256, whose slot is free only once rank 2 has
    // waited for #0 too, 2.5 s late.
    constexpr size_t kSlots = 256;
    std::vector<std::vector<float>> buffers(kRanks, std::vector<float>(kSlots + 1));
    auto comms = dist::make_local_communicators(kRanks, kInterval);
    std::vector<std::string> lines;
    {
        CapturedLog log;
        on_ranks(kRanks, [&](int rank) {
            auto& buf = buffers[static_cast<size_t>(rank)];
            for (size_t i = 0; i <= kSlots; ++i) buf[i] = static_cast<float>(rank + 1) * static_cast<float>(i);
            std::vector<dist::PendingAllreduce> pending;
            for (size_t i = 0; i < kSlots; ++i) pending.push_back(comms[rank]->allreduce_sum_start(&buf[i], 1));
            if (rank == 2) std::this_thread::sleep_for(kLate);
            comms[rank]->allreduce_wait(pending[0]);
            pending.push_back(comms[rank]->allreduce_sum_start(&buf[kSlots], 1));
            for (size_t i = 1; i < pending.size(); ++i) comms[rank]->allreduce_wait(pending[i]);
        });
        for (const auto& line : log.lines()) lines.push_back(line.text);
    }
    REQUIRE(!lines.empty());
    for (const std::string& line : lines) {
        INFO(line);
        CHECK(line.find("in the start of asynchronous all-reduce #256 (its slot waits for #0 to be waited for) "
                        "(outside a training step); replicas 0, 1 arrived, replica 2 has not") != std::string::npos);
        CHECK(line.find("replica 2 has waited") == std::string::npos);
    }
    for (int r = 0; r < kRanks; ++r)
        for (size_t i = 0; i <= kSlots; ++i) REQUIRE(buffers[static_cast<size_t>(r)][i] == 6.0f * static_cast<float>(i));
}

TEST_CASE("Stall warning: collectives that complete within the interval log nothing") {
    auto comms = dist::make_local_communicators(kRanks, kInterval);
    CapturedLog log;
    std::vector<int> wrong(kRanks, 0);
    on_ranks(kRanks, [&](int rank) {
        for (int round = 0; round < 300; ++round) {
            // Late, but less than the interval: once, by a different rank each time.
            if (round % 100 == 99 && rank == round / 100) std::this_thread::sleep_for(400ms);
            float f[3] = {1.0f, 2.0f, static_cast<float>(rank)};
            comms[rank]->allreduce_wait(comms[rank]->allreduce_sum_start(f, 2));
            comms[rank]->allreduce_sum(f + 2, 1);
            double d = 1.0;
            comms[rank]->allreduce_sum_host(&d, 1);
            comms[rank]->barrier();
            if (f[0] != 3.0f || f[1] != 6.0f || f[2] != 3.0f || d != 3.0) ++wrong[rank];
        }
    });
    CHECK(wrong == std::vector<int>(kRanks, 0));
    CHECK(log.lines().empty());
}
