// The CPU's kernels of backend/ops/optimizers.hpp.
#include <cmath>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cpu/vector_math.hpp"
#include "backend/ops/optimizers.hpp"

namespace gputrain::cpu_kernels {

namespace {

void rmsprop(Backend&, const ops::RmspropStep& op) {
    if (op.skip && *op.skip != 0) return;
    const math::RmspropParams r = *op.scalars;
    for (size_t i = 0; i < op.n; ++i)
        math::rmsprop_update(op.params[i], op.grads[i], op.v[i], op.momentum ? op.momentum + i : nullptr,
                             op.mean_grad ? op.mean_grad + i : nullptr, r);
}

void clip_by_global_norm(Backend&, const ops::ClipByGlobalNorm& op) {
    const double norm = std::sqrt(cpu::sum_of_squares(op.grads, op.n));
    *op.norm_out = static_cast<float>(norm);
    const float f = ops::clip_factor(norm, op.max_norm);
    if (f == 1.0f) return;
    for (size_t i = 0; i < op.n; ++i) op.grads[i] *= f;
}

void ema_update(Backend&, const ops::EmaUpdate& op) {
    if (op.skip && *op.skip != 0) return;
    const float decay = *op.decay;
    for (size_t i = 0; i < op.n; ++i) op.average[i] = ops::ema_value(op.average[i], op.params[i], decay);
}

}  // namespace

void add_optimizers(KernelTable& table) {
    table.add<ops::RmspropStep, &rmsprop>();
    table.add<ops::ClipByGlobalNorm, &clip_by_global_norm>();
    table.add<ops::EmaUpdate, &ema_update>();
}

}  // namespace gputrain::cpu_kernels
