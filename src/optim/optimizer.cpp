#include "optim/optimizer.hpp"

#include "core/error.hpp"
#include "core/suggest.hpp"
#include "optim/adam.hpp"
#include "optim/sgd.hpp"

namespace gputrain::optim {

const std::vector<std::string>& optimizer_names() {
    static const std::vector<std::string> names{"sgd", "adam", "adamw"};
    return names;
}

std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count) {
    if (cfg.type == "sgd") return std::make_unique<Sgd>(cfg, backend, param_count);
    if (cfg.type == "adam" || cfg.type == "adamw") return std::make_unique<Adam>(cfg, backend, param_count);
    throw ConfigError("optimizer.type: unknown optimizer '" + cfg.type + "'" +
                      did_you_mean(cfg.type, optimizer_names()) + "; known: " + join_names(optimizer_names()));
}

}  // namespace gputrain::optim
