#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "dist/local_communicator.hpp"

using namespace gputrain;

namespace {

// Runs fn(rank) on `size` threads.
template <typename F>
void on_ranks(int size, F fn) {
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) threads.emplace_back(fn, r);
    for (auto& t : threads) t.join();
}

float value(int rank, size_t i, int round) { return 0.1f * static_cast<float>(rank + 1) + 0.001f * i + round; }

}  // namespace

TEST_CASE("LocalCommunicator sums over ranks, identically on every rank, for any length") {
    for (int size : {1, 2, 3, 4}) {
        auto comms = dist::make_local_communicators(size);
        const std::vector<size_t> lengths{0, 1, 2, 5, 1000, 7};
        std::vector<std::vector<std::vector<float>>> results(size);
        for (int r = 0; r < size; ++r) {
            REQUIRE(comms[r]->rank() == r);
            REQUIRE(comms[r]->size() == size);
        }
        // Catch2 assertions are not thread-safe: threads only record, the test thread checks.
        on_ranks(size, [&](int rank) {
            for (size_t round = 0; round < lengths.size(); ++round) {
                std::vector<float> buf(lengths[round]);
                for (size_t i = 0; i < buf.size(); ++i) buf[i] = value(rank, i, static_cast<int>(round));
                comms[rank]->allreduce_sum(buf.data(), buf.size());
                results[rank].push_back(buf);
            }
        });
        for (size_t round = 0; round < lengths.size(); ++round) {
            for (size_t i = 0; i < lengths[round]; ++i) {
                float expected = 0;
                for (int r = 0; r < size; ++r) expected += value(r, i, static_cast<int>(round));  // rank order
                REQUIRE(results[0][round][i] == expected);
            }
            for (int r = 1; r < size; ++r) REQUIRE(results[r][round] == results[0][round]);
        }
    }
}

TEST_CASE("LocalCommunicator host all-reduce of doubles and barriers interleave with float all-reduces") {
    const int size = 3;
    auto comms = dist::make_local_communicators(size);
    std::vector<int> wrong(size, 0);
    on_ranks(size, [&](int rank) {
        for (int round = 0; round < 200; ++round) {
            double d[2] = {static_cast<double>(rank), 1.0};
            comms[rank]->allreduce_sum_host(d, 2);
            if (d[0] != 3.0 || d[1] != 3.0) ++wrong[rank];
            float f = static_cast<float>(round);
            comms[rank]->allreduce_sum(&f, 1);
            if (f != 3.0f * round) ++wrong[rank];
            comms[rank]->barrier();
        }
    });
    REQUIRE(wrong == std::vector<int>(size, 0));
}

TEST_CASE("Aborting the group releases ranks waiting in a collective, and later calls fail at once") {
    const int size = 3;
    auto comms = dist::make_local_communicators(size);
    std::vector<std::string> errors(size);
    on_ranks(size, [&](int rank) {
        try {
            if (rank == 1) {
                // Rank 1 "fails" instead of joining: it aborts the group.
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                comms[rank]->abort();
                return;
            }
            float x = 1.0f;
            comms[rank]->allreduce_sum(&x, 1);
        } catch (const gputrain::Error& e) {
            errors[rank] = e.what();
        }
    });
    REQUIRE(errors[0] == "stopped because another replica failed");
    REQUIRE(errors[1].empty());
    REQUIRE(errors[2] == "stopped because another replica failed");
    double d = 0;
    REQUIRE_THROWS_AS(comms[0]->allreduce_sum_host(&d, 1), gputrain::Error);
}
