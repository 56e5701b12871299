// SharedUpdate: CPU replicas that update the weights in slices, with one
// optimizer state, must end with the weights and state of one optimizer
// updating every parameter (bit for bit), for every optimizer and with runs of
// no_decay and lr_multiplier that the slices cut.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <thread>

#include "backend/cpu/cpu_backend.hpp"
#include "optim/optimizer.hpp"
#include "train/shared_update.hpp"

using namespace gputrain;

namespace {

config::OptimizerConfig optimizer_config(config::OptimizerType type) {
    config::OptimizerConfig cfg;
    cfg.type = type;
    cfg.learning_rate = 0.01;
    cfg.momentum = 0.9;     // sgd and rmsprop keep a velocity
    cfg.nesterov = true;
    cfg.centered = true;    // rmsprop keeps its mean gradient too
    cfg.weight_decay = 0.05;
    return cfg;
}

void plan(optim::Optimizer& opt, bool groups) {
    if (!groups) return;
    opt.set_decay_exempt({{3, 40}, {500, 17}});
    opt.set_lr_multipliers({{100, 250, 0.1}, {700, 301, 2.0}});
}

}  // namespace

TEST_CASE("Replicas updating slices with one optimizer state match one whole update bit for bit") {
    const size_t n = 1001;  // not a multiple of the slices' 16 floats
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> start(n);
    for (float& x : start) x = normal(rng);
    std::vector<std::vector<float>> grads(4, std::vector<float>(n));
    for (auto& g : grads)
        for (float& x : g) x = normal(rng);

    for (const auto type : {config::OptimizerType::adam, config::OptimizerType::adamw, config::OptimizerType::sgd,
                            config::OptimizerType::rmsprop}) {
        for (const bool groups : {false, true}) {
            for (const int replicas : {2, 3}) {
                INFO(config::name_of(type) << ", parameter groups " << groups << ", " << replicas << " replicas");
                const auto cfg = optimizer_config(type);
                CpuBackend whole_backend;
                auto whole = optim::make_optimizer(cfg, whole_backend, n);
                plan(*whole, groups);
                std::vector<float> reference = start;

                std::vector<std::unique_ptr<CpuBackend>> backends;
                std::vector<std::unique_ptr<optim::Optimizer>> opts;
                std::vector<std::vector<float>> weights(static_cast<size_t>(replicas), start);
                std::vector<float*> pointers;
                for (int r = 0; r < replicas; ++r) {
                    backends.push_back(std::make_unique<CpuBackend>());
                    opts.push_back(optim::make_optimizer(cfg, *backends.back(), n));
                    plan(*opts.back(), groups);
                    pointers.push_back(weights[static_cast<size_t>(r)].data());
                }
                train::SharedUpdate shared(pointers, n);
                for (int r = 0; r < replicas; ++r) {
                    const auto [begin, end] = shared.slice(r);
                    REQUIRE(begin % 16 == 0);
                    REQUIRE(end == (r + 1 == replicas ? n : shared.slice(r + 1).first));
                    opts[static_cast<size_t>(r)]->set_shard(begin, end);
                    if (r > 0) opts[static_cast<size_t>(r)]->share_state_of(*opts[0]);
                }
                for (int t = 1; t <= 4; ++t) {
                    const auto& g = grads[static_cast<size_t>(t - 1)];
                    whole->step(reference.data(), g.data(), 0.01 * t, t);
                    std::vector<std::thread> threads;
                    for (int r = 0; r < replicas; ++r)
                        threads.emplace_back([&, r] {
                            auto& opt = *opts[static_cast<size_t>(r)];
                            opt.step(weights[static_cast<size_t>(r)].data(), g.data(), 0.01 * t, t);
                            shared.publish(r);
                        });
                    for (auto& th : threads) th.join();
                    for (int r = 0; r < replicas; ++r) REQUIRE(weights[static_cast<size_t>(r)] == reference);
                }
                // The state: one copy, replica 0's, equal to the whole optimizer's.
                const auto mine = opts[0]->state(), theirs = whole->state();
                REQUIRE(mine.size() == theirs.size());
                REQUIRE(!mine.empty());
                for (size_t s = 0; s < mine.size(); ++s) {
                    REQUIRE(std::vector<float>(mine[s].data, mine[s].data + n) ==
                            std::vector<float>(theirs[s].data, theirs[s].data + n));
                    for (int r = 1; r < replicas; ++r) REQUIRE(opts[static_cast<size_t>(r)]->state()[s].data == mine[s].data);
                }
            }
        }
    }
}

TEST_CASE("A replica that fails releases the others from the shared update's barrier") {
    std::vector<float> a(64), b(64);
    train::SharedUpdate shared({a.data(), b.data()}, 64);
    std::string error;
    std::thread waiter([&] {
        try {
            shared.publish(0);
        } catch (const std::exception& e) {
            error = e.what();
        }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    shared.abort();
    waiter.join();
    REQUIRE(error == "stopped because another replica failed");
}

TEST_CASE("training.clip_norm by slices scales every slice by the global norm's factor") {
    const size_t n = 1003;
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> grads(n);
    for (float& x : grads) x = normal(rng);
    double squares = 0;
    for (float g : grads) squares += static_cast<double>(g) * g;
    const double norm = std::sqrt(squares);  // about 31.7
    for (const float max_norm : {1.0f, 1000.0f}) {
        for (const int replicas : {2, 3}) {
            INFO("max_norm " << max_norm << ", " << replicas << " replicas");
            std::vector<std::vector<float>> copies(static_cast<size_t>(replicas), grads);
            std::vector<float*> weights;
            std::vector<std::vector<float>> unused(static_cast<size_t>(replicas), std::vector<float>(n));
            for (auto& w : unused) weights.push_back(w.data());
            train::SharedUpdate shared(weights, n);
            std::vector<float> norms(static_cast<size_t>(replicas));
            std::vector<std::thread> threads;
            for (int r = 0; r < replicas; ++r)
                threads.emplace_back([&, r] {
                    norms[static_cast<size_t>(r)] = shared.clip(r, copies[static_cast<size_t>(r)].data(), max_norm);
                    shared.publish(r);
                });
            for (auto& t : threads) t.join();
            const double factor = max_norm < norm ? max_norm / (norm + 1e-6) : 1.0;
            for (int r = 0; r < replicas; ++r) {
                REQUIRE(norms[static_cast<size_t>(r)] == Approx(norm).epsilon(1e-7));
                // Each replica scales its own slice, which its optimizer reads.
                const auto [begin, end] = shared.slice(r);
                for (size_t i = begin; i < end; ++i)
                    REQUIRE(copies[static_cast<size_t>(r)][i] == Approx(grads[i] * factor).epsilon(1e-6));
            }
        }
    }
}
