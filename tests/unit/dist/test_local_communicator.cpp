#include <catch2/catch.hpp>

#include <chrono>
#include <limits>
#include <optional>
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

TEST_CASE("LocalCommunicator asynchronous all-reduces equal the synchronous ones, bit for bit, with several in flight") {
    for (int size : {1, 2, 3}) {
        INFO(size << " ranks");
        auto comms = dist::make_local_communicators(size);
        const std::vector<size_t> lengths{5, 1, 0, 1000, 33};
        std::vector<std::vector<float>> async_results(size), sync_results(size);
        on_ranks(size, [&](int rank) {
            for (int round = 0; round < 20; ++round) {
                std::vector<float> a, s;
                std::vector<size_t> begin;
                for (size_t k = 0; k < lengths.size(); ++k) {
                    begin.push_back(a.size());
                    for (size_t i = 0; i < lengths[k]; ++i) a.push_back(value(rank, i + 7 * k, round));
                }
                s = a;
                // Ranks arrive in different orders and at different times; in
                // between they join other collectives, as sync batch norm does in backward.
                std::vector<dist::PendingAllreduce> pending;
                for (size_t k = 0; k < lengths.size(); ++k) {
                    if ((rank + round + static_cast<int>(k)) % 3 == 0)
                        std::this_thread::sleep_for(std::chrono::microseconds(200));
                    pending.push_back(comms[rank]->allreduce_sum_start(a.data() + begin[k], lengths[k]));
                    if (k == 2) {
                        double d = 1.0;
                        comms[rank]->allreduce_sum_host(&d, 1);
                    }
                }
                for (auto p : pending) comms[rank]->allreduce_wait(p);
                for (size_t k = 0; k < lengths.size(); ++k) comms[rank]->allreduce_sum(s.data() + begin[k], lengths[k]);
                async_results[rank].insert(async_results[rank].end(), a.begin(), a.end());
                sync_results[rank].insert(sync_results[rank].end(), s.begin(), s.end());
            }
        });
        for (int r = 0; r < size; ++r) {
            REQUIRE(async_results[r] == sync_results[r]);
            REQUIRE(async_results[r] == async_results[0]);
        }
        // The first bucket of round 0 against a sum in rank order written here.
        for (size_t i = 0; i < lengths[0]; ++i) {
            float expected = 0;
            for (int r = 0; r < size; ++r) expected += value(r, i, 0);
            REQUIRE(async_results[0][i] == expected);
        }
    }
}

TEST_CASE("Aborting the group releases a rank waiting for an asynchronous all-reduce") {
    auto comms = dist::make_local_communicators(2);
    std::string error;
    on_ranks(2, [&](int rank) {
        if (rank == 1) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            comms[rank]->abort();
            return;
        }
        try {
            float x = 1.0f;
            comms[rank]->allreduce_wait(comms[rank]->allreduce_sum_start(&x, 1));
        } catch (const gputrain::Error& e) {
            error = e.what();
        }
    });
    REQUIRE(error == "stopped because another replica failed");
    float y = 0;
    REQUIRE_THROWS_WITH(comms[0]->allreduce_sum_start(&y, 1), "stopped because another replica failed");
}

TEST_CASE("Large asynchronous all-reduces are summed in shared chunks and still equal the rank-order sum") {
    // 3 chunks of 8192 floats and a partial one; waits that come early help sum,
    // late ones find the work done. More rounds than the 256 slots, so slots are reused.
    for (int size : {2, 3, 5}) {
        INFO(size << " ranks");
        auto comms = dist::make_local_communicators(size);
        const size_t length = 3 * 8192 + 1001;
        const int rounds = 300;
        std::vector<int> wrong(size, 0);
        on_ranks(size, [&](int rank) {
            std::vector<float> buf(length);
            for (int round = 0; round < rounds; ++round) {
                for (size_t i = 0; i < length; ++i) buf[i] = value(rank, i % 977, round % 7);
                if (round % 50 == 0 && rank == round / 50 % size)
                    std::this_thread::sleep_for(std::chrono::milliseconds(2));
                comms[rank]->allreduce_wait(comms[rank]->allreduce_sum_start(buf.data(), length));
                for (size_t i = 0; i < length; i += 37) {
                    float expected = 0;
                    for (int r = 0; r < size; ++r) expected += value(r, i % 977, round % 7);
                    if (buf[i] != expected) ++wrong[rank];
                }
                if (buf[length - 1] != buf[length - 1 - 977]) ++wrong[rank];  // same inputs, same sum
            }
        });
        REQUIRE(wrong == std::vector<int>(size, 0));
    }
}

TEST_CASE("The asynchronous all-reduce's contract is checked: waits in start order, at most 256 in flight") {
    auto comms = dist::make_local_communicators(2);
    std::vector<std::string> errors(2);
    // Buffers outlive the threads: the last rank to start an all-reduce writes into every rank's buffer.
    std::vector<std::vector<float>> buffers(2, std::vector<float>(300, 1.0f));
    on_ranks(2, [&](int rank) {
        try {
            float* x = buffers[rank].data();
            const auto first = comms[rank]->allreduce_sum_start(x, 1);
            const auto second = comms[rank]->allreduce_sum_start(x + 1, 1);
            (void)first;
            comms[rank]->allreduce_wait(second);
        } catch (const gputrain::Error& e) {
            errors[rank] = e.what();
        }
    });
    REQUIRE(errors[0] == "internal: replica 0 waited for all-reduce 1 where 0 was next");
    REQUIRE(errors[1] == "internal: replica 1 waited for all-reduce 1 where 0 was next");

    auto fresh = dist::make_local_communicators(2);
    std::string error;
    on_ranks(2, [&](int rank) {
        std::vector<float>& x = buffers[rank];
        try {
            for (size_t i = 0; i < 257; ++i) fresh[rank]->allreduce_sum_start(x.data() + i, 1);
        } catch (const gputrain::Error& e) {
            if (rank == 0) error = e.what();
        }
    });
    REQUIRE(error == "internal: replica 0 has more than 256 all-reduces in flight");
}

TEST_CASE("The asynchronous all-reduce reports whether every sum is finite, to every rank") {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const float big = std::numeric_limits<float>::max();
    const size_t length = 2 * 8192 + 5;  // three chunks, summed by whichever rank claims them
    struct Case {
        const char* what;
        size_t at;         // element that rank 1 poisons
        float value;       // what rank 1 puts there (rank 0 puts `big` there when value is big)
        bool finite;
    };
    const std::vector<Case> cases{{"all finite", 0, 1.0f, true},
                                  {"an infinity in the last chunk", length - 1, inf, false},
                                  {"a NaN in the first chunk", 3, nan, false},
                                  {"finite inputs whose sum overflows", 8192 + 7, big, false}};
    for (int size : {2, 3}) {
        auto comms = dist::make_local_communicators(size);
        // 70 rounds of the 4 cases: 280 all-reduces, so each of the 256 slots is
        // reused, after a poisoned sum as well as after a clean one.
        for (int round = 0; round < 70; ++round) {
            for (const Case& c : cases) {
                INFO(size << " ranks, round " << round << ", " << c.what);
                std::vector<std::optional<bool>> finite(size);
                std::vector<std::vector<float>> buffers(size, std::vector<float>(length, 0.5f));
                on_ranks(size, [&](int rank) {
                    if (rank == 1) buffers[rank][c.at] = c.value;
                    if (rank == 0 && c.value == big) buffers[rank][c.at] = big;
                    finite[rank] = comms[rank]->allreduce_wait_finite(
                        comms[rank]->allreduce_sum_start(buffers[rank].data(), length));
                });
                for (int r = 0; r < size; ++r) {
                    REQUIRE(finite[r].has_value());
                    REQUIRE(*finite[r] == c.finite);
                }
            }
        }
    }
    // One rank sums nothing, so it cannot tell.
    auto single = dist::make_local_communicators(1);
    float x = nan;
    REQUIRE_FALSE(single[0]->allreduce_wait_finite(single[0]->allreduce_sum_start(&x, 1)).has_value());
}
