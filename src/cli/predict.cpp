// gputrain predict CONFIG --checkpoint PATH --input FILE [--output FILE]:
// class probabilities for every sample of an IDX, CSV or NPY file.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/run_setup.hpp"
#include "core/error.hpp"
#include "data/npy.hpp"
#include "dist/launch_env.hpp"
#include "data/predict_inputs.hpp"
#include "device/devices.hpp"
#include "train/checkpointer.hpp"
#include "train/predictor.hpp"

namespace fs = std::filesystem;

namespace gputrain::cli {

namespace {

struct PredictArgs {
    CommonOptions common;
    std::string checkpoint;
    std::string input;
    std::string output;  // empty: CSV on stdout
};

bool is_npy(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return ext == ".npy";
}

// The CSV header: `names` when there is one per output (a regression's
// target columns, named in data.target_columns), else PREFIX_0..PREFIX_K-1
// (class_: probabilities; output_: a model of real-valued targets).
struct Header {
    const char* prefix;
    std::vector<std::string> names;
};

// Header line, then one row per sample; %.9g round-trips a float.
void write_csv(std::FILE* f, const std::vector<float>& probabilities, int64_t classes, const Header& header) {
    const bool named = static_cast<int64_t>(header.names.size()) == classes;
    for (int64_t j = 0; j < classes; ++j) {
        if (named)
            std::fprintf(f, "%s%s", j ? "," : "", header.names[static_cast<size_t>(j)].c_str());
        else
            std::fprintf(f, "%s%s%lld", j ? "," : "", header.prefix, (long long)j);
    }
    std::fputc('\n', f);
    for (size_t i = 0; i < probabilities.size(); i += static_cast<size_t>(classes)) {
        for (int64_t j = 0; j < classes; ++j) std::fprintf(f, "%s%.9g", j ? "," : "", probabilities[i + j]);
        std::fputc('\n', f);
    }
}

// `positions` > 1 (a sequence model): rows x positions x classes; the CSV has a row per position.
void write_output(const std::string& path, const std::vector<float>& probabilities, int64_t rows, int64_t positions,
                  int64_t classes, const Header& header) {
    if (path.empty()) {
        write_csv(stdout, probabilities, classes, header);
        // A closed pipe or a full disk: say so rather than exit 0 with rows lost.
        if (std::fflush(stdout) != 0 || std::ferror(stdout))
            throw Error("cannot write the probabilities to standard output: " + std::string(std::strerror(errno)) +
                        "; give --output FILE");
        return;
    }
    if (is_npy(path)) {
        try {
            data::write_npy_float32(path, positions > 1 ? std::vector<int64_t>{rows, positions, classes}
                                                        : std::vector<int64_t>{rows, classes},
                                    probabilities);
        } catch (const Error& e) {
            throw Error(std::string("--output: ") + e.what());
        }
        return;
    }
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
    if (!f) throw Error("--output: cannot write '" + path + "': " + std::strerror(errno));
    write_csv(f.get(), probabilities, classes, header);
    if (std::ferror(f.get()) || std::fclose(f.release()) != 0)
        throw Error("--output: cannot write '" + path + "': " + std::strerror(errno));
}

// --output naming a file predict reads (its config, checkpoint or input) would
// replace it with the probabilities; checked before the model is scored.
void require_output_apart(const PredictArgs& args) {
    if (args.output.empty()) return;
    cli::require_output_apart("--output", args.output,
                              {{"the config", &args.common.config_path}, {"--checkpoint", &args.checkpoint},
                               {"--input", &args.input}},
                              "the probabilities", "give another file", "probabilities.csv");
}

// A text model's inputs are token ids: whole numbers below the embedding's
// input_dim (the first layer's), or the model's vocabulary without one.
void require_token_ids(const std::string& path, const data::PredictInputs& inputs, const config::RunConfig& cfg) {
    int64_t vocabulary = 0;
    if (!cfg.model.layers.empty() && cfg.model.layers[0].type == "embedding")
        for (const auto& [key, value] : cfg.model.layers[0].resolved_params)
            if (key == "input_dim") vocabulary = std::stoll(value);
    const int64_t per_sample = shape_elements(cfg.model.input_shape);
    for (size_t i = 0; i < inputs.values.size(); ++i) {
        const float id = inputs.values[i];
        if (id == std::floor(id) && id >= 0 && (vocabulary == 0 || id < static_cast<float>(vocabulary))) continue;
        throw DataError(path + ": sample " + std::to_string(static_cast<int64_t>(i) / per_sample) + ", position " +
                        std::to_string(static_cast<int64_t>(i) % per_sample) + ": " + fmt::format("{:g}", id) +
                        " is no token id" +
                        (vocabulary ? " (whole numbers from 0 to " + std::to_string(vocabulary - 1) +
                                          ", the embedding's input_dim)"
                                    : " (whole numbers from 0)") +
                        "; give the ids of the text as the model's tokenizer makes them");
    }
}

int run_predict(PredictArgs& args) {
    require_output_apart(args);
    config::RunConfig cfg = load_config(args.common, args.checkpoint);
    // Probabilities may go to stdout, which the log shares: info lines would corrupt them.
    apply_log_level(cfg, /*quiet=*/true);
    // Under a launcher (mpirun -np 2, srun) every process predicts alone; rank
    // 0 writes the output, the others only their errors.
    const bool writes = dist::launcher_rank() == 0;
    if (!writes) spdlog::set_level(spdlog::level::err);
    const bool text = cfg.data.format == config::DataFormat::text;
    require_checkpoint_file("--checkpoint", args.checkpoint);
    if (text && !is_npy(args.input))
        throw ConfigError("--input '" + args.input + "': a model of format text takes windows of token ids, an NPY "
                          "array of shape (N, " + std::to_string(shape_elements(cfg.model.input_shape)) +
                          ") of whole numbers (the ids its tokenizer makes of the text)");

    // A text model reads token ids as they are: no data.scale, no normalization.
    const data::PredictInputs inputs =
        text ? data::read_predict_inputs(args.input, cfg.model.input_shape, 1.0, 1.0)
             : data::read_predict_inputs(args.input, cfg.model.input_shape, cfg.data.scale_for(true),
                                         cfg.data.scale_for(false), cfg.data.normalize_mean, cfg.data.normalize_std,
                                         cfg.data.target_columns);
    if (text) require_token_ids(args.input, inputs, cfg);
    // Inputs normalized by the user (as a PyTorch pipeline does) would be scaled a second time.
    if (!text && cfg.data.scale < 1.0 && inputs.largest_raw > 0 && inputs.largest_raw <= 1.0f)
        spdlog::warn("warning: {}: every value is within [-1, 1] before data.scale ({:g}) is applied, as in "
                     "training; if they are normalized already, add --set data.scale=1",
                     args.input, cfg.data.scale);
    // One replica: inference needs no gradient exchange, and one copy of the model is enough.
    const device::Discovery found = device::discover();
    const train::Strategy strategy(cfg, found, {args.common.device, 1});
    auto replicas = strategy.make_replicas(cfg, cfg.training.batch_size, args.checkpoint, train::ReplicaUse::inference);
    const train::TrainingState trained = train::restore(args.checkpoint, replicas, cfg, /*with_optimizer=*/false);
    warn_if_trained_differently(args.checkpoint, trained.config_yaml, cfg, /*inputs_scaled_by_user=*/true);

    const std::vector<float> probabilities = train::predict_probabilities(*replicas[0], inputs.values, inputs.rows);
    const int64_t classes = replicas[0]->model().classes();
    // Outputs of real-valued targets are values, not class probabilities,
    // named after their target columns where data.target_columns names them
    // (indices are no names: output_N then).
    const bool values = !config::is_cross_entropy(cfg.loss.name) && cfg.metric() != "accuracy";
    Header header{values ? "output_" : "class_", {}};
    const auto is_index = [](const std::string& s) {
        return !s.empty() && s.find_first_not_of("-0123456789") == std::string::npos;
    };
    if (values && std::none_of(cfg.data.target_columns.begin(), cfg.data.target_columns.end(), is_index))
        header.names = cfg.data.target_columns;
    if (!writes) return 0;
    const int64_t positions = replicas[0]->model().positions();
    write_output(args.output, probabilities, inputs.rows, positions, classes, header);
    // Finite inputs can still overflow the model (values far beyond training's range).
    int64_t bad_rows = 0, first_bad = -1;
    for (int64_t row = 0; row < inputs.rows * positions; ++row) {
        const auto begin = probabilities.begin() + row * classes;
        if (std::all_of(begin, begin + classes, [](float p) { return std::isfinite(p); })) continue;
        if (bad_rows++ == 0) first_bad = row;
    }
    if (bad_rows > 0)
        spdlog::warn("warning: {} of {} predictions are NaN or Inf (the first is sample {}): the model overflowed "
                     "on those inputs; check their values and data.scale ({:g})",
                     bad_rows, inputs.rows, first_bad, cfg.data.scale);
    return 0;
}

}  // namespace

Action add_predict_command(CLI::App& app) {
    auto args = std::make_shared<PredictArgs>();
    CLI::App* cmd = app.add_subcommand(
        "predict",
        "Class probabilities (or, for real-valued targets, the outputs) of a checkpoint's model for the samples of "
        "an IDX, CSV or NPY file; for a text model (a GPT), the next-token probabilities at every position of "
        "windows of token ids");
    cmd->add_option("config", args->common.config_path,
                    "YAML config file the model was trained with (default: the config stored in --checkpoint)");
    cmd->add_option("--checkpoint", args->checkpoint, "Checkpoint file (.safetensors) whose weights are used")
        ->check(non_empty_path())
        ->required();
    cmd->add_option("--input", args->input,
                    "Samples to score, the format by name: *.npy (float32, float64 or uint8, shape (N, ...)), "
                    "*.csv (the training layout, label or data.target_columns optional), else an IDX images file "
                    "(plain or .gz). "
                    "data.scale is applied to the values, as in training. A text model takes token ids: an NPY "
                    "array (N, block size) of whole numbers")
        ->check(non_empty_path())
        ->required();
    cmd->add_option("--output", args->output,
                    "Where to write the probabilities: *.npy (float32, N x classes; a text model's N x positions x "
                    "vocabulary), else CSV with the header class_0,... (output_0,... for real-valued targets; a "
                    "row per position for a text model); default: CSV on stdout")
        ->check(non_empty_path());
    cmd->add_option("--set", args->common.overrides, "Override a config key, e.g. --set data.scale=1")
        ->allow_extra_args(false);
    cmd->add_option("--device", args->common.device, "auto, cpu or gpu")->check(CLI::IsMember({"auto", "cpu", "gpu"}));
    return [args] { return run_predict(*args); };
}

}  // namespace gputrain::cli
