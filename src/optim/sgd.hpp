// SGD with optional momentum and Nesterov momentum (Keras' formulas).
#pragma once

#include "backend/buffer.hpp"
#include "optim/optimizer.hpp"

namespace gputrain::optim {

class Sgd : public Optimizer {
public:
    Sgd(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count);
    ~Sgd() override;
    std::string type() const override { return config::name_of(config::OptimizerType::sgd); }
    void prepare(double learning_rate, int64_t step) override;
    void apply(float* params, const float* grads, const int32_t* skip) override;
    std::vector<StateSlot> state() override;

private:
    Backend& backend_;
    size_t n_;
    double momentum_;
    bool nesterov_;
    Buffer velocity_block_, scalars_block_;
    float* velocity_ = nullptr;  // only with momentum
    math::SgdParams* scalars_;   // backend memory: the prepared step's SgdParams, one set per kind
    void kinds_changed() override;
    void adopt_state(const std::vector<StateSlot>& slots) override;
};

}  // namespace gputrain::optim
