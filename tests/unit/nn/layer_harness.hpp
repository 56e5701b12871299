// A layer on the CPU backend with its own parameter, gradient, scratch and
// workspace buffers, and a central finite-difference check of its backward pass against
// the scalar objective L = sum(y * w) for fixed random weights w.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "core/rng.hpp"
#include "nn/layer.hpp"

namespace harness {

using namespace gputrain;

struct LayerUnderTest {
    std::unique_ptr<nn::Layer> layer;
    Shape in_shape, out_shape;
    int rows;
    std::vector<std::vector<float>> params, grads;
    std::vector<float> scratch;
    std::vector<unsigned char> workspace;
    CpuBackend backend;

    LayerUnderTest(std::unique_ptr<nn::Layer> l, Shape in, int rows_, uint64_t seed = 1)
        : layer(std::move(l)), in_shape(std::move(in)), rows(rows_) {
        out_shape = layer->build(in_shape);
        Rng rng(seed);
        std::vector<float*> p, g;
        for (const auto& spec : layer->param_specs()) {
            std::vector<float> values(static_cast<size_t>(shape_elements(spec.shape)));
            for (auto& v : values) v = rng.uniform() - 0.5f;
            params.push_back(values);
            grads.emplace_back(values.size(), 0.0f);
        }
        for (size_t i = 0; i < params.size(); ++i) {
            p.push_back(params[i].data());
            g.push_back(grads[i].data());
        }
        layer->bind(p, g);
        scratch.assign(static_cast<size_t>(std::max<int64_t>(
                           1, layer->scratch_per_sample() * rows + layer->scratch_fixed())),
                       0.0f);
        layer->set_scratch(scratch.data());
        workspace.assign(std::max<size_t>(1, layer->workspace_bytes(backend, rows)), 0);
        layer->set_workspace(workspace.data(), workspace.size());
    }

    size_t in_size() const { return static_cast<size_t>(rows * shape_elements(in_shape)); }
    size_t out_size() const { return static_cast<size_t>(rows * shape_elements(out_shape)); }

    // L = sum(y * w) in double.
    double objective(const nn::RunContext& ctx, const std::vector<float>& x, const std::vector<float>& w) {
        std::vector<float> y(out_size());
        layer->forward(ctx, x.data(), y.data(), rows);
        double s = 0;
        for (size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * w[i];
        return s;
    }
};

inline std::vector<float> random_vector(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (auto& x : v) x = lo + (hi - lo) * rng.uniform();
    return v;
}

inline void check_close(double analytic, double numeric, const char* what, size_t index) {
    INFO(what << "[" << index << "]: analytic " << analytic << ", numeric " << numeric);
    REQUIRE(std::abs(analytic - numeric) <= 2e-2 * std::max(1.0, std::abs(numeric)));
}

// Checks dL/dx and dL/dparams from backward() against central differences.
inline void gradient_check(LayerUnderTest& t, const nn::RunContext& ctx, uint64_t seed = 7) {
    std::vector<float> x = random_vector(t.in_size(), seed);
    const std::vector<float> w = random_vector(t.out_size(), seed + 1);
    std::vector<float> y(t.out_size()), dx(t.in_size());
    t.layer->forward(ctx, x.data(), y.data(), t.rows);
    t.layer->backward(ctx, x.data(), y.data(), w.data(), dx.data(), t.rows);
    const std::vector<std::vector<float>> grads = t.grads;

    const float h = 1e-3f;
    for (size_t i = 0; i < x.size(); ++i) {
        const float keep = x[i];
        x[i] = keep + h;
        const double up = t.objective(ctx, x, w);
        x[i] = keep - h;
        const double down = t.objective(ctx, x, w);
        x[i] = keep;
        check_close(dx[i], (up - down) / (2.0 * h), "dx", i);
    }
    for (size_t p = 0; p < t.params.size(); ++p) {
        for (size_t i = 0; i < t.params[p].size(); ++i) {
            const float keep = t.params[p][i];
            t.params[p][i] = keep + h;
            const double up = t.objective(ctx, x, w);
            t.params[p][i] = keep - h;
            const double down = t.objective(ctx, x, w);
            t.params[p][i] = keep;
            check_close(grads[p][i], (up - down) / (2.0 * h), "dparam", i);
        }
    }
}

}  // namespace harness
