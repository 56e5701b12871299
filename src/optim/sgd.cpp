#include "optim/sgd.hpp"

#include <cstring>

namespace gputrain::optim {

Sgd::Sgd(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count)
    : backend_(backend),
      n_(param_count),
      momentum_(cfg.momentum),
      nesterov_(cfg.nesterov),
      scalars_block_(backend, sizeof(math::SgdParams)),
      scalars_(scalars_block_.as<math::SgdParams>()) {
    if (momentum_ > 0.0) {
        velocity_block_ = float_buffer(backend, param_count);
        velocity_ = velocity_block_.floats();
        backend_.fill(velocity_, n_, 0.0f);
    }
}

Sgd::~Sgd() = default;

void Sgd::prepare(double learning_rate, int64_t) {
    math::SgdParams s;
    std::memset(&s, 0, sizeof s);  // the padding too: every uploaded byte is defined
    s.learning_rate = static_cast<float>(learning_rate);
    s.momentum = static_cast<float>(momentum_);
    s.nesterov = nesterov_;
    backend_.upload(scalars_, &s, sizeof s);
}

void Sgd::apply(float* params, const float* grads, const int32_t* skip) {
    backend_.sgd_step_guarded(params, grads, velocity_, n_, scalars_, skip);
}

std::vector<StateSlot> Sgd::state() {
    if (!velocity_) return {};
    return {{"velocity", velocity_}};
}

}  // namespace gputrain::optim
