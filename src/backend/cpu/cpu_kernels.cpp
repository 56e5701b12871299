#include "backend/cpu/cpu_kernels.hpp"

namespace gputrain::cpu_kernels {

const KernelTable& table() {
    static const KernelTable kernels = [] {
        KernelTable t;
        add_attention(t);
        add_elementwise(t);
        add_embedding(t);
        add_optimizers(t);
        add_prepare(t);
        add_normalization(t);
        return t;
    }();
    return kernels;
}

}  // namespace gputrain::cpu_kernels
