#include <catch2/catch.hpp>

#include <cmath>

#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"
#include "layer_harness.hpp"
#include "model_specs.hpp"
#include "nn/model.hpp"

using namespace gputrain;
using gputrain::config::LossKind;

namespace {

config::LossConfig loss_named(LossKind name) {
    config::LossConfig l;
    l.name = name;
    return l;
}

// Sum of losses over the batch, in double, via Model::evaluate.
double total_loss(nn::Model& model, CpuBackend& be, const std::vector<float>& x, const std::vector<int32_t>& y,
                  int rows) {
    float stats[2] = {0, 0};
    nn::RunContext ctx{be, false};
    model.evaluate(ctx, x.data(), y.data(), rows, stats);
    return stats[0];
}

void check_model_gradients(const config::ModelConfig& mc, LossKind loss) {
    CpuBackend be;
    const int rows = 4;
    nn::Model model(mc, loss_named(loss), be, rows, 11);
    const auto x = harness::random_vector(static_cast<size_t>(rows * shape_elements(mc.input_shape)), 5, 0.0f, 1.0f);
    std::vector<int32_t> y{0, 2, 1, 2};
    float stats[2] = {0, 0};
    nn::RunContext ctx{be, true};
    model.forward_backward(ctx, x.data(), y.data(), rows, 1.0f, stats);
    REQUIRE(stats[0] == Approx(total_loss(model, be, x, y, rows)).epsilon(1e-5));
    const std::vector<float> analytic(model.grad_data(), model.grad_data() + model.param_count());
    float* p = model.param_data();
    const float h = 1e-3f;
    for (size_t i = 0; i < model.param_count(); ++i) {
        const float keep = p[i];
        p[i] = keep + h;
        const double up = total_loss(model, be, x, y, rows);
        p[i] = keep - h;
        const double down = total_loss(model, be, x, y, rows);
        p[i] = keep;
        harness::check_close(analytic[i], (up - down) / (2 * h), "param", i);
    }
}

}  // namespace

TEST_CASE("Model gradients through each loss match finite differences") {
    SECTION("softmax + sparse categorical cross-entropy (fused)") {
        check_model_gradients(specs::mlp({2, 3}, 5, 3, "tanh", "softmax"), LossKind::sparse_categorical_crossentropy);
    }
    SECTION("softmax + categorical cross-entropy (fused)") {
        check_model_gradients(specs::mlp({6}, 4, 3, "sigmoid", "softmax"), LossKind::categorical_crossentropy);
    }
    SECTION("sigmoid outputs + cross-entropy on probabilities (not fused)") {
        check_model_gradients(specs::mlp({6}, 4, 3, "gelu", "sigmoid"), LossKind::sparse_categorical_crossentropy);
    }
    SECTION("linear outputs + mean squared error") {
        check_model_gradients(specs::mlp({6}, 4, 3, "relu", "linear"), LossKind::mean_squared_error);
    }
    SECTION("a small CNN: reshape, conv2d (same, strided valid), pooling, dense") {
        config::ModelConfig mc;
        mc.input_shape = {30};
        mc.layers = {specs::layer("reshape", {{"target_shape", "5,-1,1"}}),
                     specs::layer("conv2d", {{"filters", "3"}, {"kernel_size", "3"}, {"padding", "same"},
                                             {"activation", "tanh"}}),
                     specs::layer("avg_pool2d", {{"pool_size", "2"}, {"strides", "1"}}),
                     specs::layer("conv2d", {{"filters", "2"}, {"kernel_size", "2,3"}, {"strides", "2"}}),
                     specs::layer("max_pool2d", {{"pool_size", "1,2"}, {"padding", "same"}}),
                     specs::layer("flatten"),
                     specs::layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
        check_model_gradients(mc, LossKind::sparse_categorical_crossentropy);
    }
}

TEST_CASE("The fused softmax gives the same loss as softmax then cross-entropy") {
    CpuBackend be;
    auto mc = specs::mlp({4}, 3, 3, "tanh", "softmax");
    nn::Model fused(mc, loss_named(LossKind::sparse_categorical_crossentropy), be, 2, 3);
    REQUIRE(fused.fused_softmax());
    // The same network with the softmax as a separate layer and MSE-free cross-entropy on probabilities:
    // compute it by hand from the logits.
    const std::vector<float> x{0.1f, 0.2f, 0.3f, 0.4f, 1.0f, -1.0f, 0.5f, 0.0f};
    const std::vector<int32_t> y{1, 2};
    float stats[2] = {0, 0};
    nn::RunContext ctx{be, false};
    fused.evaluate(ctx, x.data(), y.data(), 2, stats);
    const float* logits = fused.outputs();
    double expected = 0;
    for (int r = 0; r < 2; ++r) {
        double z = 0;
        for (int c = 0; c < 3; ++c) z += std::exp(static_cast<double>(logits[r * 3 + c]));
        expected += std::log(z) - logits[r * 3 + y[r]];
    }
    REQUIRE(stats[0] == Approx(expected).epsilon(1e-6));
}

TEST_CASE("Model summary names layers like Keras and counts parameters") {
    CpuBackend be;
    nn::Model model(specs::mlp({28, 28}, 128, 10), loss_named(LossKind::sparse_categorical_crossentropy), be, 32, 1);
    REQUIRE(model.param_count() == 784 * 128 + 128 + 128 * 10 + 10);
    REQUIRE(model.params().size() == 4);
    REQUIRE(model.params()[0].name == "dense/kernel");
    REQUIRE(model.params()[0].shape == Shape{784, 128});
    REQUIRE(model.params()[3].name == "dense_1/bias");
    const std::string s = model.summary();
    CHECK_THAT(s, Catch::Contains("flatten (flatten)"));
    CHECK_THAT(s, Catch::Contains("(None, 784)"));
    CHECK_THAT(s, Catch::Contains("100480"));
    CHECK_THAT(s, Catch::Contains("Total params: 101770"));
}

TEST_CASE("Glorot-uniform kernels lie within the limit; biases start at zero; same seed, same weights") {
    CpuBackend be;
    const auto loss = loss_named(LossKind::sparse_categorical_crossentropy);
    nn::Model a(specs::mlp({20}, 30, 5), loss, be, 1, 99), b(specs::mlp({20}, 30, 5), loss, be, 1, 99);
    const auto& kernel = a.params()[0];
    const float limit = std::sqrt(6.0f / (20 + 30));
    double sum_sq = 0;
    for (size_t i = 0; i < kernel.count; ++i) {
        const float w = a.param_data()[kernel.offset + i];
        REQUIRE(std::abs(w) <= limit);
        sum_sq += w * w;
    }
    // The variance of U(-l, l) is l^2 / 3.
    REQUIRE(sum_sq / kernel.count == Approx(limit * limit / 3).epsilon(0.15));
    const auto& bias = a.params()[1];
    for (size_t i = 0; i < bias.count; ++i) REQUIRE(a.param_data()[bias.offset + i] == 0.0f);
    REQUIRE(std::equal(a.param_data(), a.param_data() + a.param_count(), b.param_data()));
}

TEST_CASE("Model configuration errors name the layer and what to do") {
    CpuBackend be;
    const auto loss = loss_named(LossKind::sparse_categorical_crossentropy);
    auto message_of = [&](const config::ModelConfig& mc) {
        try {
            nn::Model m(mc, loss, be, 1, 1);
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    config::ModelConfig mc;
    mc.input_shape = {4};
    mc.layers = {specs::layer("dense", {{"units", "3"}}), specs::layer("desne", {{"units", "3"}})};
    REQUIRE(message_of(mc) ==
            "test.yaml:3:7: model.layers[1] (desne): type: unknown layer type 'desne' (did you mean 'dense'?); known "
            "types: add, avg_pool2d, batch_norm, causal_self_attention, concatenate, conv2d, dense, dropout, embedding, "
            "flatten, gelu, global_avg_pool2d, layer_norm, max_pool2d, multiply, positional_embedding, relu, reshape, "
            "rms_norm, sigmoid, softmax, tanh");
    mc.layers = {specs::layer("dense", {{"units", "-2"}})};
    REQUIRE(message_of(mc) == "test.yaml:3:15: model.layers[0] (dense): units: expected a positive integer, got '-2'");
    mc.layers = {specs::layer("dense", {{"units", "3"}, {"activaton", "relu"}})};
    REQUIRE(message_of(mc) == "test.yaml:3:19: model.layers[0] (dense): activaton: unknown parameter for dense (did "
                              "you mean 'activation'?); it takes: units, activation, use_bias, tie_weights, trainable, lr_multiplier");
    mc.layers = {specs::layer("dense", {{"units", "3"}, {"activation", "relux"}})};
    REQUIRE(message_of(mc) == "test.yaml:3:20: model.layers[0] (dense): activation: unknown activation 'relux' (did "
                              "you mean 'relu'?); known: linear, relu, sigmoid, tanh, softmax, gelu");
    mc.layers = {specs::layer("dropout", {{"rate", "1.5"}})};
    REQUIRE(message_of(mc) == "test.yaml:3:14: model.layers[0] (dropout): rate: must be in [0.0, 1.0), got 1.5");
    mc.layers = {specs::layer("dense", {{"units", "3"}}, "a"), specs::layer("dense", {{"units", "3"}}, "a")};
    REQUIRE(message_of(mc) == "test.yaml:3:7: model.layers[1] (dense 'a'): name: duplicate layer name 'a'; names must be unique");
    mc.layers = {specs::layer("dense")};
    REQUIRE(message_of(mc) == "test.yaml:3:7: model.layers[0] (dense): units: missing; this layer needs it (e.g. units: 128)");
    // A typo of a required key is reported as the typo, not as the key missing.
    mc.layers = {specs::layer("flatten"), specs::layer("dense", {{"unit", "32"}})};
    REQUIRE(message_of(mc) ==
            "test.yaml:3:14: model.layers[1] (dense): unit: unknown parameter for dense (did you mean 'units'?); it "
            "takes: units, activation, use_bias, tie_weights, trainable, lr_multiplier");
    // An unknown key that is no near-miss still comes before the missing one.
    mc.layers = {specs::layer("dense", {{"colour", "32"}})};
    REQUIRE(message_of(mc) ==
            "test.yaml:3:16: model.layers[0] (dense): colour: unknown parameter for dense; it takes: units, "
            "activation, use_bias, tie_weights, trainable, lr_multiplier");
    mc.layers = {specs::layer("dense")};
    REQUIRE(message_of(mc) == "test.yaml:3:7: model.layers[0] (dense): units: missing; this layer needs it (e.g. units: 128)");
}

TEST_CASE("A model built for inference computes what a training model computes, without gradient buffers") {
    // Layers of several widths, so outputs taking turns in two buffers would
    // show a layer that reads a buffer its successor overwrote; relu layers
    // write their output in place; batch norm and dropout take their inference paths.
    config::ModelConfig mc;
    mc.input_shape = {36};
    mc.layers = {specs::layer("reshape", {{"target_shape", "6,6,1"}}),
                 specs::layer("conv2d", {{"filters", "4"}, {"kernel_size", "3"}, {"padding", "same"},
                                         {"activation", "relu"}}),
                 specs::layer("batch_norm"),
                 specs::layer("max_pool2d"),
                 specs::layer("flatten"),
                 specs::layer("dense", {{"units", "20"}, {"activation", "relu"}}),
                 specs::layer("dropout", {{"rate", "0.5"}}),
                 specs::layer("dense", {{"units", "7"}, {"activation", "tanh"}}),
                 specs::layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    const int rows = 5;
    const auto x = harness::random_vector(static_cast<size_t>(rows * 36), 9, -1.0f, 1.0f);
    const std::vector<int32_t> y{0, 2, 1, 2, 0};
    CpuBackend be;
    nn::Model training(mc, loss_named(LossKind::sparse_categorical_crossentropy), be, rows, 3);
    nn::Model inference(mc, loss_named(LossKind::sparse_categorical_crossentropy), be, rows, 3, nn::ModelUse::inference);
    REQUIRE(inference.param_count() == training.param_count());
    CHECK(inference.grad_data() == nullptr);
    // Batch norm's moving statistics away from their initial 0 and 1.
    for (size_t i = 0; i < training.state_count(); ++i)
        training.state_data()[i] = inference.state_data()[i] = 0.5f + 0.1f * static_cast<float>(i);
    CHECK(std::equal(training.param_data(), training.param_data() + training.param_count(), inference.param_data()));

    nn::RunContext ctx{be, false};
    float s1[2] = {0, 0}, s2[2] = {0, 0};
    training.evaluate(ctx, x.data(), y.data(), rows, s1);
    inference.evaluate(ctx, x.data(), y.data(), rows, s2);
    CHECK(s1[0] == s2[0]);
    CHECK(s1[1] == s2[1]);
    const size_t n = static_cast<size_t>(rows) * 3;
    CHECK(std::equal(training.outputs(), training.outputs() + n, inference.outputs()));
    inference.predict(ctx, x.data(), rows);
    CHECK(std::equal(training.outputs(), training.outputs() + n, inference.outputs()));

    // Two buffers of the widest output (6x6x4 = 144 per sample) instead of every
    // output plus two gradient buffers.
    CHECK(inference.activation_floats() == 2 * rows * 144);
    CHECK(training.activation_floats() > 2 * inference.activation_floats());
    float stats[2] = {0, 0};
    nn::RunContext train_ctx{be, true};
    CHECK_THROWS_WITH(inference.forward_backward(train_ctx, x.data(), y.data(), rows, 1.0f, stats),
                      "internal: a training step on a model built for inference");
}
