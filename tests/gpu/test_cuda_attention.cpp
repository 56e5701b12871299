// The attention ops (backend/ops/attention.hpp) on the GPU against the CPU's
// kernels: forward (output and log-sum-exp), backward (dqkv) and decode (the
// caches and the output), on leading dimensions wider than the rows; with
// dropout on P, the same key on both (the same mask); the rotary turn of the
// queries and keys, and its inverse.
#include "backend/ops/attention.hpp"
#include "parity.hpp"

#include <tuple>

using namespace gpu_test;
using gputrain::run_op;
namespace ops = gputrain::ops;

namespace {

struct Case {
    int rows, T, heads, D;
};
// One position; fewer positions than a warp; more than the CPU's block of 64
// and the GPU's tiles; the largest head size; an odd one.
const std::vector<Case> kCases{{1, 1, 1, 8},    {2, 7, 2, 4},    {3, 70, 2, 64},
                               {2, 129, 3, 128}, {1, 33, 4, 5},  {2, 300, 1, 32}};

}  // namespace

TEST_CASE("attention forward and backward match the CPU") {
    for (const Case c : kCases) {
        INFO("rows " << c.rows << " T " << c.T << " heads " << c.heads << " D " << c.D);
        const int C = c.heads * c.D, ld_qkv = 3 * C + 5, ld_out = C + 3, ld_dqkv = 3 * C + 2;
        const size_t m = static_cast<size_t>(c.rows) * c.T;
        const size_t lse_n = static_cast<size_t>(c.rows) * c.heads * c.T;
        const auto qkv = random_vector(m * ld_qkv, 1);
        const auto dout = random_vector(m * ld_out, 2);
        const auto run = [&](Backend& be) {
            Buffers buf(be);
            const float* q = buf.upload(qkv);
            float* out = buf.upload(std::vector<float>(m * ld_out, 7.0f));  // the padding stays
            float* lse = buf.zeros<float>(lse_n);
            float* tile = buf.zeros<float>(ops::attention_cpu_tile_floats(c.T, c.T, c.D));
            run_op(be, ops::AttentionForward{q, ld_qkv, out, ld_out, lse, c.rows, c.T, c.heads, c.D, tile});
            float* dqkv = buf.upload(std::vector<float>(m * ld_dqkv, 123.0f));
            float* delta = buf.zeros<float>(lse_n);
            run_op(be, ops::AttentionBackward{q, ld_qkv, out, buf.upload(dout), ld_out, lse, dqkv, ld_dqkv, delta,
                                              c.rows, c.T, c.heads, c.D, tile});
            return std::make_tuple(buf.download(out, m * ld_out), buf.download(lse, lse_n),
                                   buf.download(dqkv, m * ld_dqkv));
        };
        CpuBackend cpu;
        CudaBackend gpu(0);
        const auto [out_c, lse_c, d_c] = run(cpu);
        const auto [out_g, lse_g, d_g] = run(gpu);
        require_close(out_g, out_c, 1e-4, 1e-5);
        require_close(lse_g, lse_c, 1e-5, 1e-5);
        // Sums over up to T terms in other orders.
        require_close(d_g, d_c, 1e-4, 1e-5 * std::sqrt(static_cast<double>(c.T)) + 1e-5);
    }
}

TEST_CASE("attention dropout forward and backward match the CPU on the same key") {
    for (const Case c : kCases) {
        for (const float rate : {0.1f, 0.5f}) {
            INFO("rows " << c.rows << " T " << c.T << " heads " << c.heads << " D " << c.D << " rate " << rate);
            const int C = c.heads * c.D, ld_qkv = 3 * C + 5, ld_out = C + 3, ld_dqkv = 3 * C + 2;
            const size_t m = static_cast<size_t>(c.rows) * c.T;
            const size_t lse_n = static_cast<size_t>(c.rows) * c.heads * c.T;
            const auto qkv = random_vector(m * ld_qkv, 11);
            const auto dout = random_vector(m * ld_out, 12);
            const std::vector<uint32_t> key{0x9e3779b9u, 0x7f4a7c15u};
            const int64_t first_sample = 13;
            const auto run = [&](Backend& be) {
                Buffers buf(be);
                const float* q = buf.upload(qkv);
                const uint32_t* k = buf.upload(key);
                float* out = buf.upload(std::vector<float>(m * ld_out, 7.0f));
                float* lse = buf.zeros<float>(lse_n);
                float* tile = buf.zeros<float>(ops::attention_cpu_tile_floats(c.T, c.T, c.D));
                ops::AttentionForward fwd{q, ld_qkv, out, ld_out, lse, c.rows, c.T, c.heads, c.D, tile};
                fwd.dropout_key = k;
                fwd.dropout_rate = rate;
                fwd.first_sample = first_sample;
                run_op(be, fwd);
                float* dqkv = buf.upload(std::vector<float>(m * ld_dqkv, 123.0f));
                float* delta = buf.zeros<float>(lse_n);
                ops::AttentionBackward bwd{q, ld_qkv, out, buf.upload(dout), ld_out, lse, dqkv, ld_dqkv, delta,
                                           c.rows, c.T, c.heads, c.D, tile};
                bwd.dropout_key = k;
                bwd.dropout_rate = rate;
                bwd.first_sample = first_sample;
                run_op(be, bwd);
                return std::make_tuple(buf.download(out, m * ld_out), buf.download(lse, lse_n),
                                       buf.download(dqkv, m * ld_dqkv));
            };
            CpuBackend cpu;
            CudaBackend gpu(0);
            const auto [out_c, lse_c, d_c] = run(cpu);
            const auto [out_g, lse_g, d_g] = run(gpu);
            // A mask that differed anywhere would put whole terms of 1 / (1 - rate) P v apart.
            require_close(out_g, out_c, 1e-4, 1e-5);
            require_close(lse_g, lse_c, 1e-5, 1e-5);
            require_close(d_g, d_c, 1e-4, 1e-5 * std::sqrt(static_cast<double>(c.T)) + 1e-5);
        }
    }
}

TEST_CASE("attention decode writes the caches and attends over them as the CPU") {
    for (const Case c : kCases) {
        const int length = c.T + 3;
        for (const int position : {0, c.T / 2, c.T - 1, length - 1}) {
            INFO("rows " << c.rows << " heads " << c.heads << " D " << c.D << " length " << length << " position "
                         << position);
            const int C = c.heads * c.D, ld_qkv = 3 * C + 1, ld_out = C + 2;
            const int64_t stride = 2 * static_cast<int64_t>(length) * C + 7;
            const size_t cache_n = static_cast<size_t>(c.rows) * stride;
            const auto qkv = random_vector(static_cast<size_t>(c.rows) * ld_qkv, 3);
            const auto caches = random_vector(cache_n, 4);
            const auto run = [&](Backend& be) {
                Buffers buf(be);
                float* cache = buf.upload(caches);
                float* out = buf.upload(std::vector<float>(static_cast<size_t>(c.rows) * ld_out, 7.0f));
                float* tile = buf.zeros<float>(ops::attention_cpu_tile_floats(1, position + 1, c.D));
                run_op(be, ops::AttentionDecode{buf.upload(qkv), ld_qkv, cache, cache + static_cast<size_t>(length) * C,
                                                stride, out, ld_out, c.rows, c.heads, c.D, position, tile});
                return std::make_pair(buf.download(out, static_cast<size_t>(c.rows) * ld_out),
                                      buf.download(cache, cache_n));
            };
            CpuBackend cpu;
            CudaBackend gpu(0);
            const auto [out_c, cache_c] = run(cpu);
            const auto [out_g, cache_g] = run(gpu);
            require_close(out_g, out_c, 1e-4, 1e-5);
            require_identical(cache_g, cache_c);
        }
    }
}

TEST_CASE("attention rotary turns the queries and keys as the CPU, and back") {
    for (const Case c : kCases) {
        if (c.D % 2 != 0) continue;  // the layer refuses odd heads with rotary
        for (const int64_t first : {int64_t{0}, int64_t{1000}}) {
            for (const bool inverse : {false, true}) {
                INFO("rows " << c.rows << " T " << c.T << " heads " << c.heads << " D " << c.D << " first " << first
                             << " inverse " << inverse);
                const int C = c.heads * c.D, ld = 3 * C + 3;
                const size_t n = static_cast<size_t>(c.rows) * c.T * ld;
                const auto qkv = random_vector(n, 21);
                const auto run = [&](Backend& be) {
                    Buffers buf(be);
                    float* x = buf.upload(qkv);
                    run_op(be, ops::AttentionRotary{x, ld, c.rows, c.T, c.heads, c.D, first, inverse});
                    return buf.download(x, n);
                };
                CpuBackend cpu;
                CudaBackend gpu(0);
                const auto x_c = run(cpu);
                const auto x_g = run(gpu);
                // The same float cosines and sines (formed in double); a contracted multiply-add apart.
                require_close(x_g, x_c, 1e-5, 1e-6);
            }
        }
    }
}

TEST_CASE("attention on the GPU refuses heads larger than 128") {
    CudaBackend gpu(0);
    Buffers buf(gpu);
    float* x = buf.zeros<float>(3 * 129);
    REQUIRE_THROWS_WITH(run_op(gpu, ops::AttentionForward{x, 3 * 129, x, 129, x, 1, 1, 1, 129, nullptr}),
                        "cuda:0: attention_forward: head size 129 is outside 1..128 (the CUDA kernels' limit); use "
                        "more heads");
}
