// gputrain summary CONFIG: the model table, then the memory one replica needs
// at the configured batch, without reading data or training.
#include <spdlog/spdlog.h>

#include <cstdio>

#include "backend/cpu/sizing_backend.hpp"
#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/run_setup.hpp"
#include "core/host_memory.hpp"
#include "data/loader.hpp"
#include "device/devices.hpp"
#include "nn/model.hpp"
#include "train/memory_estimate.hpp"

namespace gputrain::cli {

namespace {

struct SummaryArgs {
    CommonOptions common;
    bool dot = false;
};

void print_line(const char* what, size_t bytes) {
    std::printf("  %-36s %12zu bytes  %10s\n", what, bytes, human_bytes(bytes).c_str());
}

int run_summary(SummaryArgs& args) {
    config::RunConfig cfg = load_config(args.common);
    apply_log_level(cfg, /*quiet=*/true);
    const device::Discovery found = device::discover();
    const train::Strategy strategy(cfg, found, {args.common.device, args.common.replicas});
    const auto offsets = data::shard_offsets(cfg.training.batch_size, strategy.replicas());
    const train::MemoryEstimate m = train::estimate_memory(cfg, offsets[1] - offsets[0], strategy.on_gpu());

    SizingBackend backend;  // the table needs the shapes, not the memory
    const nn::Model model(cfg.model, cfg.loss, backend, 1, cfg.training.seed);
    if (args.dot) {
        std::printf("%s", model.dot().c_str());
        return 0;
    }
    std::printf("%s", model.summary().c_str());
    // What fit warns about the model, said here too (stderr).
    for (const std::string& w : model.warnings()) spdlog::warn("warning: {}", w);
    std::string layout = strategy.describe(cfg.training.step_batch());
    if (cfg.training.accumulate_steps > 1)
        layout += "; each optimizer step sums " + std::to_string(cfg.training.accumulate_steps) + " micro-batches of " +
                  std::to_string(cfg.training.batch_size) + " (training.accumulate_steps)";
    std::printf("\nStrategy: %s\n", layout.c_str());
    std::printf("Memory per replica (%lld samples, float32):\n", (long long)m.rows_per_replica);
    char label[64];
    print_line("weights", m.weight_bytes);
    print_line("gradients", m.gradient_bytes);
    std::snprintf(label, sizeof label, "optimizer state (%s, %zu x weights)", config::name_of(cfg.optimizer.type),
                  m.optimizer_slots);
    print_line(label, m.optimizer_bytes);
    if (m.state_bytes > 0) print_line("non-trainable (batch norm statistics, frozen layers)", m.state_bytes);
    if (m.ema_bytes > 0) print_line("moving average of the weights (training.ema)", m.ema_bytes);
    print_line("activations (outputs + gradients)", m.activation_bytes);
    print_line("layer scratch", m.scratch_bytes);
    print_line("layer workspace (shared)", m.workspace_bytes);
    print_line("input shard (inputs + labels)", m.input_bytes);
    if (m.gemm_copy_bytes > 0) {
        std::snprintf(label, sizeof label, "%s copies of GEMM inputs", config::name_of(cfg.training.precision));
        print_line(label, m.gemm_copy_bytes);
    }
    print_line("total", m.total_bytes());
    if (strategy.on_gpu())
        std::printf("(on a GPU, cuBLAS and NCCL workspaces come on top, and a convolution's workspace is what "
                    "cuDNN asks for, not the CPU's counted here)\n");
    return 0;
}

}  // namespace

Action add_summary_command(CLI::App& app) {
    auto args = std::make_shared<SummaryArgs>();
    CLI::App* cmd = app.add_subcommand(
        "summary", "Print the model's layers and parameters and the memory per replica at the configured batch "
                   "(weights, gradients, optimizer state, activations), without training");
    cmd->add_option("config", args->common.config_path, "YAML config file (default: RUN_DIR/config.yaml with --run-dir)");
    cmd->add_option("--run-dir", args->common.run_dir, "Run folder whose config.yaml (written by fit) to show")
        ->check(non_empty_path());
    cmd->add_option("--set", args->common.overrides, "Override a config key, e.g. --set training.batch_size=256")
        ->allow_extra_args(false);
    cmd->add_option("--device", args->common.device, "auto, cpu or gpu: decides the replicas, as for fit")
        ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
    cmd->add_option("--replicas", args->common.replicas, "Number of CPU replicas (threads)")->check(replica_count());
    cmd->add_flag("--dot", args->dot,
                  "Print the model as a Graphviz DOT graph instead of the table (render it with "
                  "scripts/plot-model CONFIG OUT.png, or: gputrain summary CONFIG --dot | dot -Tpng -o model.png)");
    return [args] { return run_summary(*args); };
}

}  // namespace gputrain::cli
