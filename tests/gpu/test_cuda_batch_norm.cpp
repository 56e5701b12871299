// Batch-normalization kernels (CudaBackend) against CpuBackend. Both sum in
// double (the GPU in a tree over row chunks, the CPU in order) and round the
// sums to float, so sums agree to a float rounding; everything after them to
// a few ulps.
#include <string>

#include "parity.hpp"

using namespace gpu_test;

namespace {

// [rows, channels]: single rows and channels, more rows than a block's 16
// row groups, several row chunks, channels beyond one 32-column tile, and a
// layer too wide for the chunk scratch (2 * 140000 floats), which sums in one pass.
struct Shape {
    int rows, channels;
};
const std::vector<Shape> kShapes{{1, 1},     {2, 3},      {7, 3},     {129, 785}, {1000, 10}, {4097, 3},
                                 {3, 4097},  {12544, 64}, {100003, 5}, {2, 140000}};

constexpr float kEps = 1e-3f;
constexpr float kMomentum = 0.99f;

struct BatchNormResults {
    std::vector<float> sums, mean_invstd, moving_mean, moving_var, y, y_inference, backward_sums, dx;
};

// A training step's worth of batch-norm calls on one backend.
// Off-centre inputs by default: E[x^2] - E[x]^2 must not lose the variance.
// The moving mean (the shift of the sums) starts in [mean_lo, mean_hi].
BatchNormResults run_batch_norm(Backend& be, const Shape& s, uint32_t seed, float lo = -0.5f, float hi = 2.5f,
                                float mean_lo = -1.0f, float mean_hi = 1.0f) {
    const size_t n = static_cast<size_t>(s.rows) * s.channels, c = static_cast<size_t>(s.channels);
    Buffers buf(be);
    const float* x = buf.upload(random_vector(n, seed, lo, hi));
    const float* dy = buf.upload(random_vector(n, seed + 1));
    const float* gamma = buf.upload(random_vector(c, seed + 2, 0.5f, 1.5f));
    const float* beta = buf.upload(random_vector(c, seed + 3));
    float* moving_mean = buf.upload(random_vector(c, seed + 4, mean_lo, mean_hi));
    float* moving_var = buf.upload(random_vector(c, seed + 5, 0.5f, 2.0f));
    // Garbage first: every output is overwritten.
    float* sums = buf.upload(std::vector<float>(2 * c, 123.0f));
    float* mean_invstd = buf.upload(std::vector<float>(2 * c, 123.0f));
    float* y = buf.upload(std::vector<float>(n, 123.0f));
    float* y_inference = buf.upload(std::vector<float>(n, 123.0f));
    float* backward_sums = buf.upload(std::vector<float>(2 * c, 123.0f));
    float* dx = buf.upload(std::vector<float>(n, 123.0f));
    const float count = static_cast<float>(s.rows);
    // Around the moving mean, which finalize then updates: as the layer calls them.
    be.batch_norm_sums(x, s.rows, s.channels, moving_mean, sums);
    be.batch_norm_finalize(sums, count, s.channels, kEps, kMomentum, moving_mean, mean_invstd, moving_mean,
                           moving_var);
    be.batch_norm_apply(x, mean_invstd, gamma, beta, y, s.rows, s.channels);
    be.batch_norm_inference(x, moving_mean, moving_var, kEps, gamma, beta, y_inference, s.rows, s.channels);
    be.batch_norm_backward_sums(x, dy, mean_invstd, s.rows, s.channels, backward_sums);
    be.batch_norm_backward_data(x, dy, mean_invstd, gamma, backward_sums, count, dx, s.rows, s.channels);
    return {buf.download(sums, 2 * c),         buf.download(mean_invstd, 2 * c), buf.download(moving_mean, c),
            buf.download(moving_var, c),       buf.download(y, n),               buf.download(y_inference, n),
            buf.download(backward_sums, 2 * c), buf.download(dx, n)};
}

}  // namespace

TEST_CASE("batch norm sums, statistics, outputs and gradients match the CPU") {
    CpuBackend cpu;
    CudaBackend gpu(0);
    for (const Shape s : kShapes) {
        INFO(s.rows << " rows x " << s.channels << " channels");
        const uint32_t seed = static_cast<uint32_t>(s.rows * 7 + s.channels);
        const BatchNormResults g = run_batch_norm(gpu, s, seed), c = run_batch_norm(cpu, s, seed);
        // Two double sums in different orders, each rounded to float.
        const double sum_abs = 2e-7 * s.rows;
        {
            INFO("sums");
            require_close(g.sums, c.sums, 1e-5, sum_abs);
        }
        {
            INFO("mean and invstd");
            require_close(g.mean_invstd, c.mean_invstd, 1e-4, 1e-5);
        }
        {
            INFO("moving mean and variance");
            require_close(g.moving_mean, c.moving_mean, 1e-5, 1e-6);
            require_close(g.moving_var, c.moving_var, 1e-5, 1e-6);
        }
        {
            INFO("apply");
            require_close(g.y, c.y, 1e-4, 1e-5);
        }
        {
            INFO("inference");
            require_close(g.y_inference, c.y_inference, 1e-5, 1e-6);
        }
        {
            INFO("backward sums");
            require_close(g.backward_sums, c.backward_sums, 1e-4, sum_abs);
        }
        {
            INFO("backward data");
            require_close(g.dx, c.dx, 1e-3, 1e-4);
        }
    }
}

TEST_CASE("batch norm statistics of a large mean and a small spread match the CPU (sums kept in double)") {
    // Raw pixel-like values around 1000 with a spread near 1, over a conv
    // layer's rows at batch 32, once the moving mean has come near 1000:
    // summed around it, the variance survives the float sums (a sum of x^2
    // itself, about 2.5e10, has an ulp of 2048). Before the moving mean gets
    // there it does not (docs/architecture.md, batch norm).
    CpuBackend cpu;
    CudaBackend gpu(0);
    const Shape s{25088, 4};
    const BatchNormResults g = run_batch_norm(gpu, s, 5, 998.0f, 1002.0f, 999.0f, 1001.0f),
                           c = run_batch_norm(cpu, s, 5, 998.0f, 1002.0f, 999.0f, 1001.0f);
    require_close(g.sums, c.sums, 1e-6, 0.0);
    require_close(g.mean_invstd, c.mean_invstd, 1e-3, 0.0);
    require_close(g.backward_sums, c.backward_sums, 1e-5, 1e-2);
}

TEST_CASE("batch norm sums are the same on every run (fixed summation order)") {
    CudaBackend gpu(0);
    for (const Shape s : kShapes) {
        INFO(s.rows << " rows x " << s.channels << " channels");
        const BatchNormResults first = run_batch_norm(gpu, s, 3), second = run_batch_norm(gpu, s, 3);
        require_identical(second.sums, first.sums);
        require_identical(second.backward_sums, first.backward_sums);
        require_identical(second.dx, first.dx);
    }
}

TEST_CASE("batch norm statistics from sums added across replicas equal the whole batch's (sync BN)") {
    // Two replicas' halves: their sums added (what the all-reduce does) and
    // finalized with the global count give the statistics of the whole batch.
    const int rows = 4099, first_rows = 2048, channels = 37;
    const auto x_host = random_vector(static_cast<size_t>(rows) * channels, 21, -1.0f, 3.0f);
    const size_t c = channels;
    CpuBackend cpu;
    CudaBackend gpu(0);

    Buffers cpu_buf(cpu);
    float* cpu_sums = cpu_buf.zeros<float>(2 * c);
    float* cpu_stats = cpu_buf.zeros<float>(2 * c);
    cpu.batch_norm_sums(cpu_buf.upload(x_host), rows, channels, nullptr, cpu_sums);
    cpu.batch_norm_finalize(cpu_sums, static_cast<float>(rows), channels, kEps, kMomentum, nullptr, cpu_stats,
                            nullptr, nullptr);
    const auto whole = cpu_buf.download(cpu_stats, 2 * c);

    Buffers buf(gpu);
    const float* x = buf.upload(x_host);
    float* sums_a = buf.zeros<float>(2 * c);
    float* sums_b = buf.zeros<float>(2 * c);
    gpu.batch_norm_sums(x, first_rows, channels, nullptr, sums_a);
    gpu.batch_norm_sums(x + static_cast<size_t>(first_rows) * channels, rows - first_rows, channels, nullptr, sums_b);
    auto added = buf.download(sums_a, 2 * c);
    const auto b = buf.download(sums_b, 2 * c);
    for (size_t i = 0; i < added.size(); ++i) added[i] += b[i];
    float* stats = buf.upload(std::vector<float>(2 * c, 123.0f));
    // Without moving statistics (null): only mean_invstd is written.
    gpu.batch_norm_finalize(buf.upload(added), static_cast<float>(rows), channels, kEps, kMomentum, nullptr, stats,
                            nullptr, nullptr);
    require_close(buf.download(stats, 2 * c), whole, 1e-4, 1e-5);
}

TEST_CASE("batch norm over no rows writes zero sums, as on the CPU") {
    CpuBackend cpu;
    CudaBackend gpu(0);
    const auto run = [](Backend& be) {
        Buffers buf(be);
        float* sums = buf.upload(std::vector<float>(6, 123.0f));
        const float* x = buf.zeros<float>(1);
        be.batch_norm_sums(x, 0, 3, nullptr, sums);
        return buf.download(sums, 6);
    };
    REQUIRE(run(gpu) == std::vector<float>(6, 0.0f));
    REQUIRE(run(cpu) == std::vector<float>(6, 0.0f));
}
