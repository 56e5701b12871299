// The two-level all-reduce of multi-worker runs, with fake worker processes
// (threads) in place of MPI: global ranks, sums against a naive loop, every
// replica identical, unequal replica counts refused, aborts that release everyone.
#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "dist/hierarchical_communicator.hpp"
#include "fake_processes.hpp"

using namespace gputrain;

namespace {

// Values that are sums of powers of two: every order of summation gives the same float.
float value(int global_rank, size_t i, int round) {
    return 0.25f * static_cast<float>(global_rank + 1) + static_cast<float>(i % 7) + static_cast<float>(round);
}

// processes x local replicas, each replica on its own thread; fn(process, local rank, communicator).
template <typename F>
void run_workers(int processes, int local, F fn) {
    auto procs = fake::make_processes(processes);
    std::vector<std::vector<std::unique_ptr<dist::Communicator>>> comms(static_cast<size_t>(processes));
    // Building them is a collective over the processes: one thread per process.
    std::vector<std::thread> builders;
    std::vector<std::string> errors(static_cast<size_t>(processes));
    for (int p = 0; p < processes; ++p)
        builders.emplace_back([&, p] {
            try {
                comms[p] = dist::make_hierarchical_communicators(dist::make_local_communicators(local), *procs[p]);
            } catch (const std::exception& e) {
                errors[p] = e.what();
            }
        });
    for (auto& t : builders) t.join();
    for (const auto& e : errors) REQUIRE(e.empty());
    std::vector<std::thread> threads;
    for (int p = 0; p < processes; ++p)
        for (int l = 0; l < local; ++l) threads.emplace_back([&, p, l] { fn(p, l, *comms[p][l]); });
    for (auto& t : threads) t.join();
}

}  // namespace

TEST_CASE("Hierarchical all-reduce: global ranks, the sum over every replica of every worker, everywhere") {
    for (auto [processes, local] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {2, 2}, {3, 2}, {2, 3}}) {
        INFO(processes << " workers x " << local << " replicas");
        const int world = processes * local;
        const std::vector<size_t> lengths{1, 5, 1000, 0, 3};
        std::vector<std::vector<std::vector<float>>> floats(static_cast<size_t>(world));
        std::vector<std::vector<double>> doubles(static_cast<size_t>(world));
        std::vector<int> ranks(static_cast<size_t>(world), -1), sizes(static_cast<size_t>(world), -1);
        run_workers(processes, local, [&](int p, int l, dist::Communicator& comm) {
            const int g = p * local + l;
            ranks[g] = comm.rank();
            sizes[g] = comm.size();
            for (size_t round = 0; round < lengths.size(); ++round) {
                std::vector<float> buf(lengths[round]);
                for (size_t i = 0; i < buf.size(); ++i) buf[i] = value(g, i, static_cast<int>(round));
                comm.allreduce_sum(buf.data(), buf.size());
                floats[g].push_back(buf);
                double d[2] = {static_cast<double>(g), 1.0};
                comm.allreduce_sum_host(d, 2);
                doubles[g].insert(doubles[g].end(), d, d + 2);
                comm.barrier();
            }
        });
        for (int g = 0; g < world; ++g) {
            REQUIRE(ranks[g] == g);
            REQUIRE(sizes[g] == world);
        }
        for (size_t round = 0; round < lengths.size(); ++round) {
            for (size_t i = 0; i < lengths[round]; ++i) {
                float expected = 0;
                for (int g = 0; g < world; ++g) expected += value(g, i, static_cast<int>(round));
                REQUIRE(floats[0][round][i] == expected);
            }
            for (int g = 1; g < world; ++g) REQUIRE(floats[g][round] == floats[0][round]);
        }
        for (int g = 0; g < world; ++g)
            for (size_t round = 0; round < lengths.size(); ++round) {
                REQUIRE(doubles[g][2 * round] == world * (world - 1) / 2.0);
                REQUIRE(doubles[g][2 * round + 1] == world);
            }
    }
}

TEST_CASE("Workers with different replica counts are refused with a message naming the worker") {
    auto procs = fake::make_processes(2);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int p = 0; p < 2; ++p)
        threads.emplace_back([&, p] {
            try {
                dist::make_hierarchical_communicators(dist::make_local_communicators(p + 1), *procs[p]);
            } catch (const ConfigError& e) {
                errors[p] = e.what();
            }
        });
    for (auto& t : threads) t.join();
    REQUIRE(errors[0] == "strategy: worker 0 runs 1 replicas but the workers average 1.500000; every worker must run "
                         "the same number (same strategy.replicas, same GPU count per worker)");
    REQUIRE(errors[1] == "strategy: worker 1 runs 2 replicas but the workers average 1.500000; every worker must run "
                         "the same number (same strategy.replicas, same GPU count per worker)");
}

TEST_CASE("Aborting one replica releases the replicas of its worker and the process collective") {
    std::vector<std::string> errors(4);
    run_workers(2, 2, [&](int p, int l, dist::Communicator& comm) {
        const int g = p * 2 + l;
        try {
            if (g == 3) {  // the second replica of worker 1 fails instead of joining
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                comm.abort();
                return;
            }
            float x = 1.0f;
            comm.allreduce_sum(&x, 1);
            errors[g] = "finished";
        } catch (const Error& e) {
            errors[g] = e.what();
            comm.abort();  // as train::run_on_replicas does for a failed replica
        }
    });
    // Worker 1's other replica waits in the local sum; worker 0's first replica
    // waits for worker 1 in the process collective (the fake shares its abort, as
    // MPI_Abort would end it), and then releases worker 0's second replica.
    REQUIRE(errors[0] == "stopped because another replica failed");
    REQUIRE(errors[1] == "stopped because another replica failed");
    REQUIRE(errors[2] == "stopped because another replica failed");
    REQUIRE(errors[3].empty());
}
