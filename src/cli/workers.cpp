#include "cli/workers.hpp"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "config/resolved_yaml.hpp"
#include "core/error.hpp"
#include "dist/launch_env.hpp"
#include "cli/main_entry.hpp"
#include "train/interrupt.hpp"

namespace gputrain::cli {

namespace {

[[noreturn]] void end_job(dist::World& world, const char* message, int exit_code) {
    std::fflush(stdout);
    std::fprintf(stderr, "[rank %d] gputrain: error: %s\n", world.rank(), message);
    std::fflush(stderr);
    world.abort_job(exit_code);
    std::_Exit(exit_code);  // abort_job does not return; the compiler cannot see that through the virtual call
}

// Every worker stopped after the same step (the trainer agrees on it) and rank
// 0 has written the checkpoint by the time it gets here. The barrier lets the
// others wait for that before MPI_Finalize, so that all leave together.
void wait_for_all(dist::World& world) {
    double one = 1.0;
    world.allreduce_sum(&one, 1);
}

// What every worker must agree on: the resolved config without what may
// differ per host (where the data and checkpoints are, which GPUs, logging),
// epochs included, hashed. Before the job's first collective on the data.
std::string training_fingerprint(const config::RunConfig& cfg) {
    YAML::Node root = YAML::Load(cfg.resolved_yaml);
    root.remove("run_dir");
    root.remove("checkpoint");
    root.remove("logging");
    if (root["data"]) {
        root["data"].remove("path");
        root["data"].remove("dataset");
    }
    if (root["strategy"]) root["strategy"].remove("devices");
    YAML::Emitter out;
    out << root;
    return config::fnv1a64_hex(out.c_str());
}

}  // namespace

std::unique_ptr<dist::World> join_workers(const config::RunConfig& cfg) {
    if (cfg.strategy.type != config::StrategyType::multi_worker_mirrored) {
        const int launched = dist::launcher_world_size();
        if (launched > 1 && (dist::launched_by_mpi() || dist::slurm_step().tasks > 1))
            spdlog::warn("warning: {} processes were launched, but strategy.type is {}: each trains alone and they share "
                         "the run dir; use strategy.type: multi_worker_mirrored",
                         launched, config::name_of(cfg.strategy.type));
        return nullptr;
    }
    const std::string slurm = dist::slurm_launch_problem([](const char* name) { return std::getenv(name); });
    if (!slurm.empty()) throw ConfigError("strategy.type: multi_worker_mirrored: " + slurm);
    if (!dist::launched_by_mpi()) return nullptr;
    const dist::SlurmStep step = dist::slurm_step();
    auto world = dist::join_mpi_world(static_cast<double>(cfg.strategy.timeout_seconds),
                                      cfg.strategy.stall_warning_seconds);
    if (world->size() > 1) {
        // Errors that reach main (a config the workers disagree on, below) and
        // the signal handlers' notes say which worker speaks, as run_as_worker's do.
        const std::string prefix = "[rank " + std::to_string(world->rank()) + "] ";
        set_error_prefix(prefix);
        train::set_interrupt_prefix(prefix);
    }
    // Workers of one job train one config; a different batch size or epoch
    // count would otherwise fail deep inside MPI or wait out the timeout.
    dist::require_same_config(*world, training_fingerprint(cfg));
    // srun's view of the tasks must be MPI's (a task of another job step, a
    // PMI that numbered them otherwise): the data shards follow the MPI rank.
    if (step.tasks > 1 && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr &&
        (step.tasks != world->size() || step.task != world->rank()))
        throw ConfigError("strategy.type: multi_worker_mirrored: Slurm says task " + std::to_string(step.task) +
                          " of " + std::to_string(step.tasks) + " (SLURM_PROCID, SLURM_STEP_NUM_TASKS), MPI says rank " +
                          std::to_string(world->rank()) + " of " + std::to_string(world->size()) +
                          "; start the workers with srun --mpi=pmix alone (not srun inside mpirun or the reverse)");
    if (world->rank() != 0) {
        spdlog::default_logger()->set_pattern("[rank " + std::to_string(world->rank()) + "] %v");
        if (spdlog::get_level() < spdlog::level::warn) spdlog::set_level(spdlog::level::warn);
    }
    return world;
}

int run_as_worker(dist::World* world, const std::function<int()>& body) {
    if (!world || world->size() == 1) return body();
    try {
        return body();
    } catch (const train::Interrupted& e) {
        try {
            wait_for_all(*world);
        } catch (const Error& barrier) {
            end_job(*world, barrier.what(), e.exit_code());
        }
        // A clean end on every worker: the caller finalizes MPI and exits
        // 128 + signal. Rank 0 reports the stop and the resume command, as a
        // single process does; the others only exit.
        if (world->rank() == 0) throw;
        return e.exit_code();
    } catch (const dist::WorkersDisagree&) {
        // Every worker is here, with its own view of the disagreement: main
        // prints it with this worker's "[rank N] " (join_workers set it).
        throw;
    } catch (const Error& e) {
        end_job(*world, e.what(), e.exit_code());
    } catch (const std::bad_alloc&) {
        end_job(*world, "out of memory; reduce training.batch_size or the model size", 1);
    } catch (const std::exception& e) {
        end_job(*world, e.what(), 1);
    }
}

}  // namespace gputrain::cli
