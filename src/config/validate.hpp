// Rules that relate keys to each other, checked after every section is read:
// keys that only one optimizer/schedule/data kind uses, dataset vs path, devices
// vs strategy, the checkpoint monitor vs the metrics. Fills what follows from
// them (data.format becomes synthetic for dataset: synthetic).
#pragma once

#include "config/config_source.hpp"
#include "config/run_config.hpp"

namespace gputrain::config {

void validate(RunConfig& config, const ConfigSource& source);

}  // namespace gputrain::config
