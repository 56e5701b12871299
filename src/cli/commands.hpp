// One function per subcommand; each registers its options on the CLI11 app
// and returns the action to run once the arguments are parsed.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace gputrain::cli {

using Action = std::function<int()>;

Action add_fit_command(CLI::App& app);
Action add_evaluate_command(CLI::App& app);
Action add_devices_command(CLI::App& app);
Action add_predict_command(CLI::App& app);
Action add_generate_command(CLI::App& app);
Action add_summary_command(CLI::App& app);
Action add_data_command(CLI::App& app);
Action add_bench_command(CLI::App& app);
Action add_lr_find_command(CLI::App& app);
Action add_export_command(CLI::App& app);

}  // namespace gputrain::cli
