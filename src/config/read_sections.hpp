// One reader per top-level section: the keys each section knows, their types,
// ranges and defaults (including defaults that depend on another key of the
// same section, like the optimizer's learning rate). Rules that relate keys to
// each other live in validate.hpp.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "config/section.hpp"
#include "config/section_keys.hpp"

namespace gputrain::config {

inline const std::vector<std::string>& kTopLevelKeys = keys_of("");

std::string read_run_dir(const Section& top);
ModelConfig read_model(const Section& top);
LossConfig read_loss(const Section& top);
// The default: [accuracy], or [mae] for a loss of real targets or data.target_columns.
std::vector<std::string> read_metrics(const Section& top, LossKind loss, bool real_targets);
OptimizerConfig read_optimizer(const Section& top);
DataConfig read_data(const Section& top);
TrainingConfig read_training(const Section& top);
StrategyConfig read_strategy(const Section& top);
CheckpointConfig read_checkpoint(const Section& top);
EarlyStoppingConfig read_early_stopping(const Section& top);
ReduceLrOnPlateauConfig read_reduce_lr_on_plateau(const Section& top);
LoggingConfig read_logging(const Section& top);

// The item `index` of the list at `list` (a sequence node), with its path and place.
ValueRef list_item(const ValueRef& list, size_t index);

}  // namespace gputrain::config
