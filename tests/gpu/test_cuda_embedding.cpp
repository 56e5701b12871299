// The embedding kernels (backend/ops/embedding.hpp) against the CPU's: the
// lookup (an id out of range gives NaN), the table's gradient (summed in the
// order of the ids up to 4,096 tokens of vocabulary, so the same bits as the
// CPU's; atomics beyond), and the gradient added to what the table's gradient
// holds (`accumulate`: a dense layer tied to the table has written its part
// first; the GPU adds its sum to it, the CPU adds each row in turn, so they
// agree to rounding).
#include <cmath>
#include <tuple>

#include "backend/ops/embedding.hpp"
#include "parity.hpp"

using namespace gpu_test;
using gputrain::run_op;
namespace ops = gputrain::ops;

namespace {

struct Out {
    std::vector<float> y, grad, accumulated;
};

Out run(Backend& be, const std::vector<float>& ids, const std::vector<float>& table, const std::vector<float>& dy,
        const std::vector<float>& prior, int vocab, int dim) {
    Buffers buf(be);
    const size_t count = ids.size();
    const float* d_ids = buf.upload(ids);
    float* y = buf.zeros<float>(count * static_cast<size_t>(dim));
    run_op(be, ops::EmbeddingLookup{d_ids, buf.upload(table), y, count, vocab, dim});
    const float* d_dy = buf.upload(dy);
    // Garbage first: without accumulate the op overwrites the whole table.
    float* grad = buf.upload(std::vector<float>(table.size(), 123.0f));
    run_op(be, ops::EmbeddingGrad{d_ids, d_dy, grad, count, vocab, dim, false});
    float* acc = buf.upload(prior);
    run_op(be, ops::EmbeddingGrad{d_ids, d_dy, acc, count, vocab, dim, true});
    Out out;
    out.y = buf.download(y, count * static_cast<size_t>(dim));
    out.grad = buf.download(grad, table.size());
    out.accumulated = buf.download(acc, table.size());
    return out;
}

}  // namespace

TEST_CASE("embedding lookup and gradient kernels match the CPU, accumulate included") {
    CpuBackend cpu;
    CudaBackend gpu(0);
    for (const auto& [count, vocab, dim] : {std::tuple{1, 1, 1}, std::tuple{257, 65, 32}, std::tuple{16384, 84, 384},
                                          std::tuple{3000, 70000, 8}}) {
        INFO(count << " ids, vocab " << vocab << ", dim " << dim);
        std::vector<float> ids(static_cast<size_t>(count));
        for (int n = 0; n < count; ++n) ids[static_cast<size_t>(n)] = static_cast<float>((n * 7919 + 13) % vocab);
        if (count > 2) ids[1] = static_cast<float>(vocab);  // out of range: a row of NaN, no gradient
        const size_t cells = static_cast<size_t>(vocab) * static_cast<size_t>(dim);
        const auto table = random_vector(cells, 1);
        const auto dy = random_vector(static_cast<size_t>(count) * static_cast<size_t>(dim), 2);
        const auto prior = random_vector(cells, 3);
        const Out want = run(cpu, ids, table, dy, prior, vocab, dim);
        const Out got = run(gpu, ids, table, dy, prior, vocab, dim);
        if (count > 2) REQUIRE(std::isnan(got.y[static_cast<size_t>(dim)]));
        for (size_t i = 0; i < want.y.size(); ++i)
            if (!std::isnan(want.y[i])) REQUIRE(got.y[i] == want.y[i]);
        if (vocab <= 4096) require_identical(got.grad, want.grad);
        else require_close(got.grad, want.grad, 1e-5, 1e-6);
        require_close(got.accumulated, want.accumulated, 1e-5, 1e-6);
    }
}
