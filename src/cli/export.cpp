// gputrain export: a checkpoint's model as an ONNX file (export/onnx_graph.hpp).
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/run_setup.hpp"
#include "core/error.hpp"
#include "device/devices.hpp"
#include "export/onnx_graph.hpp"
#include "train/checkpointer.hpp"

namespace fs = std::filesystem;

namespace gputrain::cli {

namespace {

struct ExportArgs {
    CommonOptions common;
    std::string checkpoint;
    std::string onnx;
};

// --onnx must be a new or replaceable file in an existing folder, and not a
// file export reads: checked before anything is built.
void require_output_apart(const ExportArgs& args) {
    cli::require_output_apart("--onnx", args.onnx,
                              {{"the config", &args.common.config_path}, {"--checkpoint", &args.checkpoint}},
                              "the model", "give another file, e.g. model.onnx", "model.onnx");
}

int run_export(ExportArgs& args) {
    require_output_apart(args);
    config::RunConfig cfg = load_config(args.common, args.checkpoint);
    apply_log_level(cfg, false);
    require_checkpoint_file("--checkpoint", args.checkpoint);

    // One CPU replica: the weights are read from host memory.
    const device::Discovery found = device::discover();
    const train::Strategy strategy(cfg, found, {"cpu", 1});
    auto replicas = strategy.make_replicas(cfg, 1, args.checkpoint, train::ReplicaUse::inference);
    const train::TrainingState trained = train::restore(args.checkpoint, replicas, cfg, /*with_optimizer=*/false);
    warn_if_trained_differently(args.checkpoint, trained.config_yaml, cfg);

    const exporter::OnnxGraph graph = exporter::onnx_graph(replicas[0]->model(), cfg);
    exporter::write_onnx(graph, args.onnx);
    std::error_code ec;
    const auto bytes = fs::file_size(args.onnx, ec);
    std::printf("%s: ONNX opset %lld, %zu nodes, %zu weight tensors, %.1f MB%s; input 'input' %s %s, output "
                "'output' %s%s\n",
                args.onnx.c_str(), (long long)exporter::kOnnxOpset, graph.nodes.size(), graph.initializers.size(),
                ec ? 0.0 : static_cast<double>(bytes) / 1e6,
                trained.ema_weights ? " (the weights' moving average, training.ema)" : "",
                shape_to_string(graph.input_dims).c_str(), graph.input_ids ? "int64 (token ids)" : "float32",
                shape_to_string(graph.output_dims).c_str(),
                cfg.data.format != config::DataFormat::text &&
                        (cfg.data.scale_for(true) != 1.0 || !cfg.data.normalize_mean.empty())
                    ? "; inputs are taken after data.scale and data.normalize (the file's metadata has them)"
                    : "");
    return 0;
}

}  // namespace

Action add_export_command(CLI::App& app) {
    auto args = std::make_shared<ExportArgs>();
    CLI::App* cmd = app.add_subcommand(
        "export",
        "Write a checkpoint's model as an ONNX file (opset 17, any batch size) for ONNX Runtime, TensorRT, "
        "OpenVINO and other runtimes; its outputs are what gputrain predict writes");
    cmd->add_option("config", args->common.config_path,
                    "YAML config file the model was trained with (default: the config stored in --checkpoint)");
    cmd->add_option("--checkpoint", args->checkpoint, "Checkpoint file (.safetensors) whose weights are exported")
        ->check(non_empty_path())
        ->required();
    cmd->add_option("--onnx", args->onnx, "The ONNX file to write (replaced whole, never half-written)")
        ->check(non_empty_path())
        ->required();
    cmd->add_option("--set", args->common.overrides, "Override a config key, e.g. --set data.scale=1")
        ->allow_extra_args(false);
    return [args] { return run_export(*args); };
}

}  // namespace gputrain::cli
