// The stall watchdog's PeerChannel over MPI, for real (test_mpi_peers.sh runs
// it under mpirun -np 3). Workers 0 and 1 play processes whose replicas all
// wait in collective #5, as NCCL's would; worker 2 is "behind" (its watch
// answers: at #4, not waiting) or "silent" (it has no watch thread, so nobody
// answers, as when it is stopped). Each worker's watch logs its lines to
// stderr, "[rank N] " first; the script checks what workers 0 and 1 say.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "dist/collective_watch.hpp"
#include "dist/mpi_world.hpp"

using namespace gputrain;

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode != "behind" && mode != "silent") {
        std::fprintf(stderr, "usage: mpirun -np 3 %s behind|silent\n", argv[0]);
        return 2;
    }
    try {
        auto world = dist::join_mpi_world(/*timeout_seconds=*/60);
        const int rank = world->rank();
        auto logger = std::make_shared<spdlog::logger>("peers", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        logger->set_pattern("[rank " + std::to_string(rank) + "] %v");
        spdlog::set_default_logger(logger);
        const bool answers = !(rank == 2 && mode == "silent");
        {
            dist::CollectiveWatch watch({"replica " + std::to_string(rank) + " (cpu)"}, 1.0, rank, world->size(),
                                        /*thread=*/answers, answers ? world->peer_channel() : nullptr);
            for (int n = 0; n < (rank == 2 ? 4 : 5); ++n) watch.issued(0, "an all-reduce");
            if (rank != 2) watch.wait_begins(0);
            std::this_thread::sleep_for(std::chrono::milliseconds(5000));
        }
        double one = 1;
        world->allreduce_sum(&one, 1);  // every watch has ended before any worker finalizes MPI
        if (one != world->size()) throw Error("the closing all-reduce gave " + std::to_string(one));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mpi_peers_check: %s\n", e.what());
        return 1;
    }
}
