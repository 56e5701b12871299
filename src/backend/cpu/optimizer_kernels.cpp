// The CPU's kernels of backend/ops/optimizers.hpp.
#include "backend/cpu/cpu_kernels.hpp"
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

}  // namespace

void add_optimizers(KernelTable& table) { table.add<ops::RmspropStep, &rmsprop>(); }

}  // namespace gputrain::cpu_kernels
