#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "optim/optimizer.hpp"

using gputrain::CpuBackend;
using gputrain::config::OptimizerConfig;
using gputrain::config::OptimizerType;

namespace {

// Keras Adam in double, written from its documentation:
// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// alpha = lr sqrt(1 - b2^t) / (1 - b1^t); p -= alpha m / (sqrt(v) + eps).
// AdamW first applies p -= lr wd p.
struct ReferenceAdam {
    double b1, b2, eps, wd;
    std::vector<double> p, m, v;

    void step(const std::vector<double>& g, double lr, int t) {
        const double alpha = lr * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t));
        for (size_t i = 0; i < p.size(); ++i) {
            p[i] -= lr * wd * p[i];
            m[i] = b1 * m[i] + (1.0 - b1) * g[i];
            v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
            p[i] -= alpha * m[i] / (std::sqrt(v[i]) + eps);
        }
    }
};

const float* slot(gputrain::optim::Optimizer& opt, const std::string& name) {
    for (const auto& s : opt.state())
        if (s.name == name) return s.data;
    FAIL("no state slot " << name);
    return nullptr;
}

void run_against_reference(const OptimizerConfig& cfg, double wd) {
    CpuBackend be;
    const std::vector<double> p0{0.5, -1.25, 2.0, 0.0};
    const std::vector<std::vector<double>> grads{{0.1, -0.4, 1.5, 0.0}, {0.3, 0.2, -0.5, 1e-3}, {-0.2, 0.05, 0.7, 2.0}};
    const std::vector<double> lrs{cfg.learning_rate, cfg.learning_rate, 0.5 * cfg.learning_rate};
    const size_t n = p0.size();
    ReferenceAdam ref{cfg.beta1, cfg.beta2, cfg.epsilon, wd, p0, std::vector<double>(n), std::vector<double>(n)};

    auto opt = gputrain::optim::make_optimizer(cfg, be, n);
    std::vector<float> params(p0.begin(), p0.end());
    for (int t = 1; t <= 3; ++t) {
        const std::vector<float> g(grads[t - 1].begin(), grads[t - 1].end());
        opt->step(params.data(), g.data(), lrs[t - 1], t);
        ref.step(grads[t - 1], lrs[t - 1], t);
        const float* m = slot(*opt, "adam_m");
        const float* v = slot(*opt, "adam_v");
        for (size_t i = 0; i < n; ++i) {
            INFO("step " << t << " param " << i);
            REQUIRE(m[i] == Approx(ref.m[i]).epsilon(1e-5).margin(1e-9));
            // 1 - beta2 is formed in float, like Keras' float32 variables: 1 - 0.999f is
            // 1.0000467e-3, so v carries a 5e-5 relative offset by design.
            REQUIRE(v[i] == Approx(ref.v[i]).epsilon(1e-4).margin(1e-12));
            REQUIRE(params[i] == Approx(ref.p[i]).epsilon(1e-5).margin(1e-7));
        }
    }
}

OptimizerConfig adamw(double learning_rate, double weight_decay) {
    OptimizerConfig cfg;
    cfg.type = OptimizerType::adamw;
    cfg.learning_rate = learning_rate;
    cfg.weight_decay = weight_decay;
    return cfg;
}

}  // namespace

TEST_CASE("Adam follows the Keras formulas over three steps") {
    OptimizerConfig cfg;
    cfg.type = OptimizerType::adam;
    cfg.learning_rate = 0.01;
    run_against_reference(cfg, 0.0);
}

TEST_CASE("Adam with non-default betas and epsilon") {
    OptimizerConfig cfg;
    cfg.type = OptimizerType::adam;
    cfg.learning_rate = 0.1;
    cfg.beta1 = 0.5;
    cfg.beta2 = 0.75;
    cfg.epsilon = 1e-3;
    run_against_reference(cfg, 0.0);
}

TEST_CASE("AdamW decays the weights by lr * weight_decay before the Adam update") {
    OptimizerConfig cfg;
    cfg.type = OptimizerType::adamw;
    cfg.learning_rate = 0.05;
    cfg.weight_decay = 0.1;
    run_against_reference(cfg, 0.1);
}

TEST_CASE("AdamW with a zero gradient only decays") {
    CpuBackend be;
    const OptimizerConfig cfg = adamw(0.01, 0.004);
    auto opt = gputrain::optim::make_optimizer(cfg, be, 2);
    std::vector<float> p{1.0f, -3.0f};
    const std::vector<float> g{0.0f, 0.0f};
    opt->step(p.data(), g.data(), cfg.learning_rate, 1);
    REQUIRE(p[0] == Approx(1.0 * (1 - 0.01 * 0.004)).epsilon(1e-7));
    REQUIRE(p[1] == Approx(-3.0 * (1 - 0.01 * 0.004)).epsilon(1e-7));
}

TEST_CASE("Adam ignores weight_decay unless the type is adamw; type() names the variant") {
    CpuBackend be;
    OptimizerConfig cfg;
    cfg.type = OptimizerType::adam;
    cfg.weight_decay = 0.5;  // validation rejects this; the optimizer must not apply it anyway
    cfg.learning_rate = 0.01;
    run_against_reference(cfg, 0.0);
    REQUIRE(gputrain::optim::make_optimizer(cfg, be, 1)->type() == "adam");
    cfg.type = OptimizerType::adamw;
    cfg.weight_decay = 0.004;
    REQUIRE(gputrain::optim::make_optimizer(cfg, be, 1)->type() == "adamw");
}

TEST_CASE("Adam state has the adam_m and adam_v slots, zero before the first step") {
    CpuBackend be;
    OptimizerConfig cfg;
    auto opt = gputrain::optim::make_optimizer(cfg, be, 5);
    const auto state = opt->state();
    REQUIRE(state.size() == 2);
    REQUIRE(state[0].name == "adam_m");
    REQUIRE(state[1].name == "adam_v");
    for (const auto& s : state)
        for (int i = 0; i < 5; ++i) REQUIRE(s.data[i] == 0.0f);
}

TEST_CASE("Adam minimizes a quadratic") {
    CpuBackend be;
    OptimizerConfig cfg;
    cfg.type = OptimizerType::adam;
    cfg.learning_rate = 0.02;
    const std::vector<double> target{1.0, -2.0, 0.5}, curvature{1.0, 10.0, 0.1};
    std::vector<float> p{-1.0f, 3.0f, 4.0f}, g(3);
    auto loss = [&] {
        double l = 0;
        for (size_t i = 0; i < p.size(); ++i) l += curvature[i] * (p[i] - target[i]) * (p[i] - target[i]);
        return l;
    };
    const double initial = loss();
    auto opt = gputrain::optim::make_optimizer(cfg, be, p.size());
    for (int t = 1; t <= 3000; ++t) {
        for (size_t i = 0; i < p.size(); ++i) g[i] = static_cast<float>(2 * curvature[i] * (p[i] - target[i]));
        opt->step(p.data(), g.data(), cfg.learning_rate, t);
    }
    REQUIRE(loss() < 1e-4 * initial);
    for (size_t i = 0; i < p.size(); ++i) REQUIRE(p[i] == Approx(target[i]).margin(0.02));
}

TEST_CASE("prepare + apply is step(); apply with a raised skip flag changes nothing") {
    CpuBackend be;
    const OptimizerConfig cfg = adamw(0.01, 0.01);
    auto a = gputrain::optim::make_optimizer(cfg, be, 3);
    auto b = gputrain::optim::make_optimizer(cfg, be, 3);
    std::vector<float> pa{0.5f, -1.0f, 2.0f}, pb = pa;
    const std::vector<float> g{0.1f, -0.2f, 0.3f};
    const int32_t skip = 1, go = 0;
    a->step(pa.data(), g.data(), 0.01, 1);
    b->prepare(0.01, 1);
    b->apply(pb.data(), g.data(), &skip);  // a bad step: nothing moves, not even the moments
    REQUIRE(pb == std::vector<float>{0.5f, -1.0f, 2.0f});
    for (const auto& s : b->state()) REQUIRE(std::vector<float>(s.data, s.data + 3) == std::vector<float>(3, 0.0f));
    b->apply(pb.data(), g.data(), &go);  // the scalars prepared before still hold
    REQUIRE(pa == pb);
    REQUIRE(std::vector<float>(slot(*a, "adam_m"), slot(*a, "adam_m") + 3) ==
            std::vector<float>(slot(*b, "adam_m"), slot(*b, "adam_m") + 3));
}

TEST_CASE("AdamW's optimizer.no_decay ranges take Adam's update without the decay") {
    OptimizerConfig cfg;
    cfg.type = OptimizerType::adamw;
    cfg.learning_rate = 0.1;
    cfg.weight_decay = 0.5;
    CpuBackend be;
    const std::vector<double> p0{0.5, -1.25, 2.0, 0.75, -0.5};
    const std::vector<double> g{0.1, -0.4, 1.5, 0.2, -0.3};
    // Parameters 1..2 and 4 are exempt; 0 and 3 decay.
    ReferenceAdam decayed{cfg.beta1, cfg.beta2, cfg.epsilon, cfg.weight_decay, p0, std::vector<double>(5),
                          std::vector<double>(5)};
    ReferenceAdam plain{cfg.beta1, cfg.beta2, cfg.epsilon, 0.0, p0, std::vector<double>(5), std::vector<double>(5)};
    auto opt = gputrain::optim::make_optimizer(cfg, be, 5);
    opt->set_decay_exempt({{1, 2}, {4, 1}});
    std::vector<float> params(p0.begin(), p0.end());
    const std::vector<float> grads(g.begin(), g.end());
    for (int t = 1; t <= 3; ++t) {
        opt->step(params.data(), grads.data(), cfg.learning_rate, t);
        decayed.step(g, cfg.learning_rate, t);
        plain.step(g, cfg.learning_rate, t);
    }
    // (1 - beta2 is formed in float, as above: about 2e-6 off the double reference at this rate.)
    for (size_t i : {size_t{0}, size_t{3}}) REQUIRE(params[i] == Approx(decayed.p[i]).epsilon(1e-5).margin(1e-5));
    for (size_t i : {size_t{1}, size_t{2}, size_t{4}}) REQUIRE(params[i] == Approx(plain.p[i]).epsilon(1e-5).margin(1e-5));
    REQUIRE(std::abs(decayed.p[0] - plain.p[0]) > 1e-3);  // the decay is large enough to tell them apart
}

TEST_CASE("lr_multipliers: a layer's range trains at the rate times its multiplier (decay too); no_decay still holds") {
    // Ten parameters: [2, 6) at 3x the rate, [8, 10) exempt from decay (AdamW, wd 0.1), the rest plain;
    // each element against Keras' AdamW in double with its own rate and decay.
    CpuBackend be;
    OptimizerConfig cfg;
    cfg.type = OptimizerType::adamw;
    cfg.learning_rate = 0.01;
    cfg.weight_decay = 0.1;
    const size_t n = 10;
    std::vector<double> p0(n), g0(n);
    for (size_t i = 0; i < n; ++i) {
        p0[i] = std::sin(1.0 + static_cast<double>(i));
        g0[i] = std::cos(2.0 * static_cast<double>(i));
    }
    auto opt = gputrain::optim::make_optimizer(cfg, be, n);
    opt->set_decay_exempt({{8, 2}});
    opt->set_lr_multipliers({{2, 4, 3.0}});
    std::vector<float> params(p0.begin(), p0.end());
    std::vector<ReferenceAdam> refs;
    for (size_t i = 0; i < n; ++i)
        refs.push_back({cfg.beta1, cfg.beta2, cfg.epsilon, i >= 8 ? 0.0 : cfg.weight_decay, {p0[i]}, {0.0}, {0.0}});
    for (int t = 1; t <= 3; ++t) {
        std::vector<float> g(n);
        for (size_t i = 0; i < n; ++i) g[i] = static_cast<float>(g0[i] * t);
        opt->step(params.data(), g.data(), cfg.learning_rate, t);
        for (size_t i = 0; i < n; ++i) {
            const double rate = (i >= 2 && i < 6) ? 3.0 * cfg.learning_rate : cfg.learning_rate;
            refs[i].step({g0[i] * t}, rate, t);
            INFO("step " << t << " param " << i);
            REQUIRE(params[i] == Approx(refs[i].p[0]).epsilon(1e-5).margin(1e-7));
        }
    }
}

TEST_CASE("lr_multipliers on SGD and RMSprop: the multiplied range moves by the multiple of a plain step") {
    for (const OptimizerType type : {OptimizerType::sgd, OptimizerType::rmsprop}) {
        CpuBackend be;
        OptimizerConfig cfg;
        cfg.type = type;
        cfg.learning_rate = 0.01;
        const std::vector<float> p0{1.0f, 1.0f, 1.0f, 1.0f};
        const std::vector<float> g{0.5f, 0.5f, 0.5f, 0.5f};
        auto opt = gputrain::optim::make_optimizer(cfg, be, 4);
        opt->set_lr_multipliers({{1, 2, 4.0}});
        std::vector<float> p = p0;
        opt->step(p.data(), g.data(), cfg.learning_rate, 1);
        INFO(gputrain::config::name_of(type));
        const float plain = p0[0] - p[0];
        REQUIRE(plain > 0.0f);
        REQUIRE(p0[1] - p[1] == Approx(4.0f * plain).epsilon(1e-5));
        REQUIRE(p0[2] - p[2] == Approx(4.0f * plain).epsilon(1e-5));
        REQUIRE(p[3] == p[0]);
    }
}

TEST_CASE("set_momentum (one_cycle's cycle_momentum): each step's beta1 in the moment and in its bias correction; "
          "SGD's momentum likewise") {
    // PyTorch's Adam under a cycled beta1 uses the step's beta1 for exp_avg and for 1 - beta1^t.
    CpuBackend be;
    OptimizerConfig cfg;
    cfg.learning_rate = 0.01;
    const std::vector<double> p0{0.5, -1.25, 2.0};
    const std::vector<double> betas{0.95, 0.9, 0.85};
    auto opt = gputrain::optim::make_optimizer(cfg, be, p0.size());
    std::vector<float> params(p0.begin(), p0.end());
    std::vector<double> p = p0, m(3, 0.0), v(3, 0.0);
    for (int t = 1; t <= 3; ++t) {
        const double b1 = betas[static_cast<size_t>(t - 1)];
        const std::vector<double> g{0.1 * t, -0.4, 1.5 / t};
        const std::vector<float> gf(g.begin(), g.end());
        opt->set_momentum(b1);
        opt->step(params.data(), gf.data(), cfg.learning_rate, t);
        const double alpha = cfg.learning_rate * std::sqrt(1.0 - std::pow(cfg.beta2, t)) / (1.0 - std::pow(b1, t));
        for (size_t i = 0; i < 3; ++i) {
            m[i] = b1 * m[i] + (1.0 - b1) * g[i];
            v[i] = cfg.beta2 * v[i] + (1.0 - cfg.beta2) * g[i] * g[i];
            p[i] -= alpha * m[i] / (std::sqrt(v[i]) + cfg.epsilon);
            INFO("step " << t << " param " << i);
            REQUIRE(params[i] == Approx(p[i]).epsilon(1e-6));
        }
    }
    // SGD with momentum 0.9 configured, 0.5 set: velocity = 0.5 * velocity - lr * g (Keras' form).
    OptimizerConfig sgd;
    sgd.type = OptimizerType::sgd;
    sgd.learning_rate = 0.1;
    sgd.momentum = 0.9;
    auto s = gputrain::optim::make_optimizer(sgd, be, 1);
    float w = 1.0f;
    const float grad = 1.0f;
    s->set_momentum(0.5);
    s->step(&w, &grad, sgd.learning_rate, 1);
    s->step(&w, &grad, sgd.learning_rate, 2);
    // velocities -0.1, then 0.5 * -0.1 - 0.1 = -0.15: w = 1 - 0.1 - 0.15.
    REQUIRE(w == Approx(0.75f).epsilon(1e-6));
}
