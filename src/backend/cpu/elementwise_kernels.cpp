// The CPU's kernels of backend/ops/elementwise.hpp.
#include <algorithm>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/ops/elementwise.hpp"

namespace gputrain::cpu_kernels {

namespace {

void multiply(Backend&, const ops::Multiply& op) {
    for (size_t i = 0; i < op.n; ++i) op.out[i] = op.a[i] * op.b[i];
}

void accumulate(Backend&, const ops::Accumulate& op) {
    for (size_t i = 0; i < op.n; ++i) op.y[i] += op.x[i];
}

void copy_strided(Backend&, const ops::CopyStrided& op) {
    for (int r = 0; r < op.rows; ++r)
        std::copy_n(op.src + static_cast<size_t>(r) * op.ld_src, op.cols, op.dst + static_cast<size_t>(r) * op.ld_dst);
}

}  // namespace

void add_elementwise(KernelTable& table) {
    table.add<ops::Multiply, &multiply>();
    table.add<ops::Accumulate, &accumulate>();
    table.add<ops::CopyStrided, &copy_strided>();
}

}  // namespace gputrain::cpu_kernels
