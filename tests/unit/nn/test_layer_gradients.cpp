#include "layer_harness.hpp"
#include "nn/activation_layer.hpp"
#include "nn/dense.hpp"
#include "nn/dropout.hpp"
#include "nn/flatten.hpp"

using namespace gputrain;
using harness::LayerUnderTest;

TEST_CASE("Dense gradients match finite differences for every activation, fused passes or plain") {
    const bool fused = GENERATE(true, false);
    for (Activation act : {Activation::linear, Activation::relu, Activation::sigmoid, Activation::tanh,
                           Activation::gelu, Activation::softmax}) {
        INFO("activation " << activation_name(act) << (fused ? ", fused" : ", plain"));
        LayerUnderTest t(std::make_unique<nn::Dense>(4, act, true), {5}, 3);
        nn::RunContext ctx{t.backend, true};
        ctx.fused = fused;
        harness::gradient_check(t, ctx);
    }
}

TEST_CASE("Dense without bias, on a 2-D input (applied over the last axis)") {
    LayerUnderTest t(std::make_unique<nn::Dense>(3, Activation::tanh, false), {2, 4}, 2);
    REQUIRE(t.out_shape == Shape{2, 3});
    REQUIRE(t.layer->param_specs().size() == 1);
    nn::RunContext ctx{t.backend, true};
    harness::gradient_check(t, ctx);
}

TEST_CASE("Dense forward equals x W + b computed by hand") {
    LayerUnderTest t(std::make_unique<nn::Dense>(2, Activation::linear, true), {3}, 2);
    const std::vector<float> x{1, 2, 3, -1, 0, 0.5f};
    std::vector<float> y(4);
    nn::RunContext ctx{t.backend, false};
    t.layer->forward(ctx, x.data(), y.data(), 2);
    const auto& W = t.params[0];
    const auto& b = t.params[1];
    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) {
            double s = b[c];
            for (int k = 0; k < 3; ++k) s += x[r * 3 + k] * W[k * 2 + c];
            REQUIRE(y[r * 2 + c] == Approx(s).epsilon(1e-6));
        }
}

TEST_CASE("Activation layers' gradients match finite differences") {
    for (Activation act : {Activation::relu, Activation::sigmoid, Activation::tanh, Activation::gelu,
                           Activation::softmax}) {
        INFO("activation " << activation_name(act));
        LayerUnderTest t(std::make_unique<nn::ActivationLayer>(act), {2, 3}, 2);
        nn::RunContext ctx{t.backend, true};
        harness::gradient_check(t, ctx);
    }
}

TEST_CASE("Flatten passes values and gradients through unchanged") {
    LayerUnderTest t(std::make_unique<nn::Flatten>(), {2, 3, 2}, 3);
    REQUIRE(t.out_shape == Shape{12});
    nn::RunContext ctx{t.backend, true};
    harness::gradient_check(t, ctx);
}

TEST_CASE("Dropout: identity in inference; in training a fixed mask whose gradient checks out") {
    LayerUnderTest t(std::make_unique<nn::Dropout>(0.5f), {50}, 4);
    const auto x = harness::random_vector(t.in_size(), 3);
    std::vector<float> y(t.out_size());
    nn::RunContext infer{t.backend, false, 9, 0, 0, 0};
    t.layer->forward(infer, x.data(), y.data(), 4);
    REQUIRE(y == x);

    nn::RunContext train{t.backend, true, 9, 1, 5, 0};
    t.layer->forward(train, x.data(), y.data(), 4);
    size_t zeros = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        if (y[i] == 0.0f) ++zeros;
        else REQUIRE(y[i] == Approx(2.0f * x[i]));
    }
    REQUIRE(zeros > 60);
    REQUIRE(zeros < 140);
    // The mask depends on (seed, epoch, step, row), not on the call: the check is stable.
    harness::gradient_check(t, train);
}

TEST_CASE("Dropout masks follow the global row, so any sharding gives the same mask") {
    LayerUnderTest whole(std::make_unique<nn::Dropout>(0.3f), {8}, 6);
    LayerUnderTest part(std::make_unique<nn::Dropout>(0.3f), {8}, 2);
    const auto x = harness::random_vector(whole.in_size(), 4);
    std::vector<float> y_whole(whole.out_size()), y_part(part.out_size());
    whole.layer->forward({whole.backend, true, 3, 2, 7, 0}, x.data(), y_whole.data(), 6);
    // Rows 4..5 of the same global batch, as the third of three replicas would see them.
    part.layer->forward({part.backend, true, 3, 2, 7, 4}, x.data() + 4 * 8, y_part.data(), 2);
    for (size_t i = 0; i < y_part.size(); ++i) REQUIRE(y_part[i] == y_whole[4 * 8 + i]);
    // A different step draws a different mask.
    std::vector<float> y_next(whole.out_size());
    whole.layer->forward({whole.backend, true, 3, 2, 8, 0}, x.data(), y_next.data(), 6);
    REQUIRE(y_next != y_whole);
}

TEST_CASE("Dropout: prepare_step writes the step's key where a recorded mask call reads it") {
    LayerUnderTest t(std::make_unique<nn::Dropout>(0.4f), {8}, 3);
    const auto x = harness::random_vector(t.in_size(), 5);
    const size_t n = t.out_size();
    std::vector<float> y5(n), y6(n), replayed(n), mask(n);
    t.layer->forward({t.backend, true, 3, 1, 5, 0}, x.data(), y5.data(), 3);
    t.layer->prepare_step({t.backend, true, 3, 1, 6, 0});
    // What replaying step 5's recorded call does after that: the same call,
    // the key read from the start of the scratch block (dropout.hpp).
    t.backend.dropout_forward_keyed(x.data(), replayed.data(), mask.data(), n, 0.4f,
                                    reinterpret_cast<const uint32_t*>(t.scratch.data()), 0);
    t.layer->forward({t.backend, true, 3, 1, 6, 0}, x.data(), y6.data(), 3);
    REQUIRE(replayed == y6);
    REQUIRE(y6 != y5);
}
