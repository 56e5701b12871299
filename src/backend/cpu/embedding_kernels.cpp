// The CPU backend's kernels of backend/ops/embedding.hpp.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/backend.hpp"
#include "backend/cpu/cpu_kernels.hpp"
#include "backend/ops/embedding.hpp"

namespace gputrain::cpu_kernels {

namespace {

// The id's row, or -1 when the float is not an id of the vocabulary.
inline long id_of(float v, int vocab) {
    if (!(v >= 0.0f) || v >= static_cast<float>(vocab) || v != std::floor(v)) return -1;
    return static_cast<long>(v);
}

void embedding_lookup(Backend&, const ops::EmbeddingLookup& op) {
    const size_t d = static_cast<size_t>(op.dim);
    for (size_t n = 0; n < op.count; ++n) {
        const long id = id_of(op.ids[n], op.vocab);
        float* out = op.y + n * d;
        if (id < 0) std::fill_n(out, d, std::numeric_limits<float>::quiet_NaN());
        else std::copy_n(op.table + static_cast<size_t>(id) * d, d, out);
    }
}

void embedding_grad(Backend&, const ops::EmbeddingGrad& op) {
    const size_t d = static_cast<size_t>(op.dim);
    if (!op.accumulate) std::fill_n(op.d_table, static_cast<size_t>(op.vocab) * d, 0.0f);
    for (size_t n = 0; n < op.count; ++n) {
        const long id = id_of(op.ids[n], op.vocab);
        if (id < 0) continue;
        float* row = op.d_table + static_cast<size_t>(id) * d;
        const float* g = op.dy + n * d;
        for (size_t c = 0; c < d; ++c) row[c] += g[c];
    }
}

}  // namespace

void add_embedding(KernelTable& table) {
    table.add<ops::EmbeddingLookup, &embedding_lookup>();
    table.add<ops::EmbeddingGrad, &embedding_grad>();
}

}  // namespace gputrain::cpu_kernels
