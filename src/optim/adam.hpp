// Adam and AdamW with Keras' formulas and defaults (see backend/math.hpp).
#pragma once

#include "backend/buffer.hpp"
#include "optim/optimizer.hpp"

namespace gputrain::optim {

class Adam : public Optimizer {
public:
    Adam(const config::OptimizerConfig& cfg, Backend& backend, size_t param_count);
    ~Adam() override;
    std::string type() const override { return config::name_of(type_); }
    void prepare(double learning_rate, int64_t step) override;
    void apply(float* params, const float* grads, const int32_t* skip) override;
    std::vector<StateSlot> state() override { return {{"adam_m", m_}, {"adam_v", v_}}; }

private:
    Backend& backend_;
    config::OptimizerType type_;  // as configured: adam or adamw
    size_t n_;
    double beta1_, beta2_, epsilon_, weight_decay_;
    Buffer m_block_, v_block_, scalars_block_;
    float* m_;
    float* v_;
    math::AdamParams* scalars_;  // backend memory: the prepared step's AdamParams, one set per kind
    void kinds_changed() override;
    void adopt_state(const std::vector<StateSlot>& slots) override;
};

}  // namespace gputrain::optim
