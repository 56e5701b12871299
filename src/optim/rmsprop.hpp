// RMSprop with Keras' formula and defaults (rho 0.9, epsilon 1e-7, momentum
// 0, centered false; backend/math.hpp), run as a backend op (backend/ops/optimizers.hpp).
#pragma once

#include "backend/buffer.hpp"
#include "optim/optimizer.hpp"

namespace gputrain::optim {

class Rmsprop : public Optimizer {
public:
    Rmsprop(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count);
    std::string type() const override { return config::name_of(config::OptimizerType::rmsprop); }
    void prepare(double learning_rate, int64_t step) override;
    void apply(float* params, const float* grads, const int32_t* skip) override;
    std::vector<StateSlot> state() override;

private:
    Backend& backend_;
    size_t n_;
    double rho_, momentum_, epsilon_;
    bool centered_;
    Buffer v_block_, momentum_block_, mean_grad_block_, scalars_block_;
    float* v_;
    float* momentum_slot_ = nullptr;    // only with momentum > 0
    float* mean_grad_ = nullptr;        // only when centered
    math::RmspropParams* scalars_;      // backend memory: the prepared step's scalars
    void kinds_changed() override;
    void adopt_state(const std::vector<StateSlot>& slots) override;
};

}  // namespace gputrain::optim
