#include "optim/sgd.hpp"

namespace gputrain::optim {

Sgd::Sgd(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count)
    : backend_(backend), n_(param_count), momentum_(cfg.momentum), nesterov_(cfg.nesterov) {
    if (momentum_ > 0.0) {
        velocity_ = backend.allocate_floats(param_count);
        backend_.fill(velocity_, n_, 0.0f);
    }
}

Sgd::~Sgd() {
    if (velocity_) backend_.release(velocity_);
}

void Sgd::step(float* params, const float* grads, double learning_rate, int64_t) {
    const math::SgdParams s{static_cast<float>(learning_rate), static_cast<float>(momentum_), nesterov_};
    backend_.sgd_step(params, grads, velocity_, n_, s);
}

std::vector<StateSlot> Sgd::state() {
    if (!velocity_) return {};
    return {{"velocity", velocity_}};
}

}  // namespace gputrain::optim
