#include "optim/optimizer.hpp"

#include "core/error.hpp"
#include "optim/adam.hpp"
#include "optim/rmsprop.hpp"
#include "optim/sgd.hpp"

namespace gputrain::optim {

std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count) {
    switch (cfg.type) {
        case config::OptimizerType::sgd: return std::make_unique<Sgd>(cfg, backend, param_count);
        case config::OptimizerType::adam:
        case config::OptimizerType::adamw: return std::make_unique<Adam>(cfg, backend, param_count);
        case config::OptimizerType::rmsprop: return std::make_unique<Rmsprop>(cfg, backend, param_count);
    }
    throw Error("internal: optimizer.type has no optimizer");
}

}  // namespace gputrain::optim
