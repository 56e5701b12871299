// NameSet: the names a config may use for one kind of choice, in the order
// docs/config.md and error messages list them, and how messages call them.
// The closed sets that become enums have their tables in enums.hpp (which
// makes their NameSets); metrics, a list of names, is read as text.
#pragma once

#include <string>
#include <vector>

namespace gputrain::config {

struct NameSet {
    std::string noun;                 // "optimizer": "unknown optimizer 'x'"
    std::string plural;               // "optimizers": "known optimizers: ..."
    std::vector<std::string> names;
};

inline const NameSet kMetricNames{"metric", "metrics", {"accuracy", "mae", "mse", "loss"}};

}  // namespace gputrain::config
