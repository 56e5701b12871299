// Models as graphs: merge layers, fan-out, blocks, liveness, and the errors
// a graph can have. Gradients against central differences.
#include <catch2/catch.hpp>

#include <cmath>

#include "backend/cpu/cpu_backend.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "layer_harness.hpp"
#include "nn/model.hpp"
#include "nn/resolve_layers.hpp"

using namespace gputrain;

namespace {

config::RunConfig load_model(const std::string& model_yaml, const std::string& blocks = "") {
    return config::load_from_string(blocks + "model:\n" + model_yaml + "data: {dataset: synthetic}\n", "g.yaml");
}

config::LossConfig cross_entropy() {
    config::LossConfig l;
    l.name = config::LossKind::sparse_categorical_crossentropy;
    return l;
}

double total_loss(nn::Model& model, CpuBackend& be, const std::vector<float>& x, const std::vector<int32_t>& y,
                  int rows) {
    float stats[2] = {0, 0};
    nn::RunContext ctx{be, false};
    model.evaluate(ctx, x.data(), y.data(), rows, stats);
    return stats[0];
}

// Every parameter's gradient (through the merges, the fan-out and the sums)
// against central differences of the loss, in double.
void check_gradients(const config::ModelConfig& mc) {
    CpuBackend be;
    const int rows = 3;
    nn::Model model(mc, cross_entropy(), be, rows, 7);
    const auto x = harness::random_vector(static_cast<size_t>(rows * shape_elements(mc.input_shape)), 5, -1.0f, 1.0f);
    const std::vector<int32_t> y{0, 2, 1};
    float stats[2] = {0, 0};
    nn::RunContext ctx{be, true};
    model.forward_backward(ctx, x.data(), y.data(), rows, 1.0f, stats);
    REQUIRE(stats[0] == Approx(total_loss(model, be, x, y, rows)).epsilon(1e-5));
    const std::vector<float> analytic(model.grad_data(), model.grad_data() + model.param_count());
    float* p = model.param_data();
    const float h = 1e-3f;
    size_t nonzero = 0;
    for (size_t i = 0; i < model.param_count(); ++i) {
        const float keep = p[i];
        p[i] = keep + h;
        const double up = total_loss(model, be, x, y, rows);
        p[i] = keep - h;
        const double down = total_loss(model, be, x, y, rows);
        p[i] = keep;
        harness::check_close(analytic[i], (up - down) / (2 * h), "param", i);
        nonzero += analytic[i] != 0.0f;
    }
    CHECK(nonzero > model.param_count() / 2);  // the gradients reached the layers in front of the merges
}

std::string model_error(const std::string& model_yaml, const std::string& blocks = "") {
    try {
        config::RunConfig cfg = load_model(model_yaml, blocks);
        nn::resolve_layers(cfg);
        CpuBackend be;
        nn::Model m(cfg.model, cross_entropy(), be, 2, 1);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("Merge layers and a tensor read by three layers: gradients match finite differences") {
    SECTION("fan-out 3 into an add of three") {
        check_gradients(load_model("  input_shape: [5]\n"
                                   "  layers:\n"
                                   "    - {type: dense, units: 4, activation: tanh, name: trunk}\n"
                                   "    - {type: dense, units: 3, activation: tanh, name: a}\n"
                                   "    - {type: dense, units: 3, activation: sigmoid, inputs: trunk, name: b}\n"
                                   "    - {type: dense, units: 3, inputs: trunk, name: c}\n"
                                   "    - {type: add, inputs: [a, b, c]}\n"
                                   "    - {type: dense, units: 3, activation: softmax}\n")
                            .model);
    }
    SECTION("concatenate along the last axis, one input read directly") {
        check_gradients(load_model("  input_shape: [4]\n"
                                   "  layers:\n"
                                   "    - {type: dense, units: 3, activation: tanh}\n"
                                   "    - {type: dense, units: 2, activation: gelu, inputs: input}\n"
                                   "    - {type: concatenate, inputs: [dense, dense_1, input]}\n"
                                   "    - {type: dense, units: 3, activation: softmax}\n")
                            .model);
    }
    SECTION("multiply of two and of three inputs") {
        check_gradients(load_model("  input_shape: [4]\n"
                                   "  layers:\n"
                                   "    - {type: dense, units: 3, activation: tanh}\n"
                                   "    - {type: dense, units: 3, activation: sigmoid, inputs: input}\n"
                                   "    - {type: multiply, inputs: [dense, dense_1]}\n"
                                   "    - {type: multiply, inputs: [multiply, dense, dense_1]}\n"
                                   "    - {type: dense, units: 3, activation: softmax}\n")
                            .model);
    }
    SECTION("a residual conv block with batch norm and a concatenation of channels") {
        check_gradients(load_model("  input_shape: [5, 4, 2]\n"
                                   "  layers:\n"
                                   "    - {type: conv2d, filters: 3, kernel_size: 3, padding: same, activation: tanh}\n"
                                   "    - {type: conv2d, filters: 3, kernel_size: 3, padding: same}\n"
                                   "    - {type: add, inputs: [conv2d, conv2d_1]}\n"
                                   "    - {type: tanh}\n"
                                   "    - {type: concatenate, inputs: [tanh, input]}\n"
                                   "    - {type: global_avg_pool2d}\n"
                                   "    - {type: dense, units: 3, activation: softmax}\n")
                            .model);
    }
}

TEST_CASE("A tensor read twice by one layer counts twice") {
    // add(x, x) = 2x: the gradient of the layer in front doubles.
    check_gradients(load_model("  input_shape: [3]\n"
                               "  layers:\n"
                               "    - {type: dense, units: 4, activation: tanh}\n"
                               "    - {type: add, inputs: [dense, dense]}\n"
                               "    - {type: dense, units: 3, activation: softmax}\n")
                        .model);
}

TEST_CASE("Merge layers compute Keras' Add, Concatenate and Multiply") {
    CpuBackend be;
    const config::ModelConfig mc = load_model("  input_shape: [1, 2]\n"
                                              "  layers:\n"
                                              "    - {type: relu, name: r}\n"
                                              "    - {type: tanh, inputs: input, name: t}\n"
                                              "    - {type: add, inputs: [r, t, input], name: s}\n"
                                              "    - {type: multiply, inputs: [s, r], name: m}\n"
                                              "    - {type: concatenate, inputs: [m, input, t]}\n"
                                              "    - {type: flatten}\n")
                                       .model;
    config::LossConfig mse;
    mse.name = config::LossKind::mean_squared_error;
    nn::Model model(mc, mse, be, 2, 1, nn::ModelUse::inference);
    REQUIRE(model.output_shape() == Shape{6});
    const std::vector<float> x{0.5f, -2.0f, 1.5f, 0.25f};
    nn::RunContext ctx{be, false};
    model.predict(ctx, x.data(), 2);
    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) {
            const double v = x[r * 2 + c], relu = std::max(v, 0.0), t = std::tanh(v), s = relu + t + v;
            const float* out = model.outputs() + r * 6;
            CHECK(out[c] == Approx(s * relu).margin(1e-6));
            CHECK(out[2 + c] == Approx(v));
            CHECK(out[4 + c] == Approx(t).margin(1e-6));
        }
}

TEST_CASE("Inference buffers are reused by liveness; a skip connection keeps one more alive") {
    CpuBackend be;
    auto floats = [&](const std::string& yaml) {
        nn::Model m(load_model(yaml).model, cross_entropy(), be, 4, 1, nn::ModelUse::inference);
        return m.activation_floats();
    };
    // Every output is 8 wide: a chain takes turns in two buffers.
    CHECK(floats("  input_shape: [8]\n  layers: [{type: dense, units: 8}, {type: relu}, {type: tanh}, "
                 "{type: dense, units: 8}]\n") == 2 * 4 * 8);
    // dense is read again by the add after two more layers: three buffers live at once.
    CHECK(floats("  input_shape: [8]\n  layers: [{type: dense, units: 8}, {type: relu}, {type: tanh}, "
                 "{type: add, inputs: [dense, tanh]}, {type: dense, units: 8}]\n") == 3 * 4 * 8);
}

TEST_CASE("A graph model computes the same in training and inference mode") {
    const config::ModelConfig mc = load_model("  input_shape: [6, 6, 1]\n"
                                              "  layers:\n"
                                              "    - {type: conv2d, filters: 4, kernel_size: 3, padding: same}\n"
                                              "    - {type: batch_norm}\n"
                                              "    - {type: relu}\n"
                                              "    - {type: conv2d, filters: 4, kernel_size: 3, padding: same}\n"
                                              "    - {type: add, inputs: [conv2d_1, conv2d]}\n"
                                              "    - {type: max_pool2d}\n"
                                              "    - {type: conv2d, filters: 2, kernel_size: 1, name: p}\n"
                                              "    - {type: concatenate, inputs: [max_pool2d, p]}\n"
                                              "    - {type: flatten}\n"
                                              "    - {type: dense, units: 3, activation: softmax}\n")
                                       .model;
    const int rows = 5;
    const auto x = harness::random_vector(static_cast<size_t>(rows * 36), 9, -1.0f, 1.0f);
    const std::vector<int32_t> y{0, 2, 1, 2, 0};
    CpuBackend be;
    nn::Model training(mc, cross_entropy(), be, rows, 3);
    nn::Model inference(mc, cross_entropy(), be, rows, 3, nn::ModelUse::inference);
    for (size_t i = 0; i < training.state_count(); ++i)
        training.state_data()[i] = inference.state_data()[i] = 0.5f + 0.1f * static_cast<float>(i);
    nn::RunContext ctx{be, false};
    float s1[2] = {0, 0}, s2[2] = {0, 0};
    training.evaluate(ctx, x.data(), y.data(), rows, s1);
    inference.evaluate(ctx, x.data(), y.data(), rows, s2);
    CHECK(s1[0] == s2[0]);
    CHECK(std::equal(training.outputs(), training.outputs() + rows * 3, inference.outputs()));
}

TEST_CASE("Graph errors name the layers, shapes and places") {
    const std::string head = "  input_shape: [4]\n  layers:\n";
    CHECK(model_error(head + "    - {type: dense, units: 3}\n    - {type: dense, units: 3, inputs: dens}\n") ==
          "g.yaml:5:31: model.layers[1] (dense): inputs: unknown layer 'dens' (did you mean 'dense'?); name a layer "
          "listed above it, or 'input'");
    CHECK(model_error(head + "    - {type: dense, units: 3, inputs: dense_2}\n    - {type: dense, units: 3, inputs: input}\n"
                             "    - {type: dense, units: 3}\n") ==
          "g.yaml:4:31: model.layers[0] (dense): inputs: reads 'dense_2', which is listed after it; list every layer "
          "after the layers it reads");
    CHECK(model_error(head + "    - {type: dense, units: 3, inputs: dense_1}\n    - {type: dense, units: 3}\n") ==
          "g.yaml:4:31: model.layers[0] (dense): inputs: a cycle: dense <- dense_1 <- dense ('dense_1' without inputs: "
          "reads the layer listed before it); a model has no cycles");
    CHECK(model_error(head + "    - {type: dense, units: 3, inputs: b, name: a}\n"
                             "    - {type: dense, units: 3, inputs: a, name: b}\n") ==
          "g.yaml:4:31: model.layers[0] (dense 'a'): inputs: a cycle: a <- b <- a; a model has no cycles");
    CHECK(model_error(head + "    - {type: dense, units: 3}\n    - {type: dense, units: 5, inputs: input}\n"
                             "    - {type: add, inputs: [dense, dense_1]}\n") ==
          "g.yaml:6:7: layer 'add' (add): its inputs must have one shape, but 'dense' (None, 3) and 'dense_1' "
          "(None, 5) differ; make them equal (a 1x1 conv2d or a dense layer of that width on one branch)");
    CHECK(model_error("  input_shape: [8, 8, 1]\n  layers:\n    - {type: conv2d, filters: 2, kernel_size: 3}\n"
                      "    - {type: conv2d, filters: 2, kernel_size: 1, inputs: input}\n"
                      "    - {type: add, inputs: [conv2d, conv2d_1]}\n") ==
          "g.yaml:6:7: layer 'add' (add): its inputs must have one shape, but 'conv2d' (None, 6, 6, 2) and 'conv2d_1' "
          "(None, 8, 8, 2) differ; make them equal (the same strides, pooling and padding on both branches, or a "
          "strided 1x1 conv2d on the wider one)");
    CHECK(model_error(head + "    - {type: dense, units: 3}\n    - {type: dense, units: 5, inputs: input}\n"
                             "    - {type: dense, units: 2}\n") ==
          "g.yaml:4:7: model.layers[0] (dense): layer 'dense': its output is read by no layer, and a model has one "
          "output, its last layer ('dense_2'); read it with another layer's inputs: or remove it");
    CHECK(model_error(head + "    - {type: dense, units: 3}\n    - {type: dense, units: 3, inputs: [input, dense]}\n") ==
          "g.yaml:5:7: layer 'dense_1' (dense): takes one input, got 2 ('input', 'dense'); join them first with an "
          "add, concatenate or multiply layer");
    CHECK(model_error(head + "    - {type: add, inputs: input}\n    - {type: dense, units: 3}\n") ==
          "g.yaml:4:7: layer 'add' (add): needs at least two inputs, got 1; list them, e.g. inputs: [conv2d, "
          "shortcut]");
    CHECK(model_error(head + "    - {type: dense, units: 3, name: input}\n") ==
          "g.yaml:4:31: model.layers[0] (dense 'input'): name: 'input' names the model's input (inputs: input); "
          "give the layer another name");
    // What Keras users write: input for inputs, concatenate's axis, two names in one string.
    CHECK(model_error(head + "    - {type: dense, units: 3, input: x}\n") ==
          "g.yaml:4:31: model.layers[0] (dense): input: unknown parameter for dense (did you mean 'inputs'?); it "
          "takes: units, activation, use_bias, tie_weights, trainable, lr_multiplier");
    CHECK(model_error(head + "    - {type: dense, units: 3}\n    - {type: concatenate, inputs: [input, dense], axis: -1}\n") ==
          "g.yaml:5:51: model.layers[1] (concatenate): axis: concatenate always joins the last axis (channels for "
          "images, Keras' axis=-1); remove axis");
    CHECK(model_error(head + "    - {type: dense, units: 3}\n    - {type: add, inputs: 'input, dense'}\n") ==
          "g.yaml:5:27: model.layers[1].inputs: 'input, dense' is one name with a comma in it; list several as "
          "inputs: [input, dense]");
    CHECK(model_error("  input_shape: [4, 4, 2]\n  layers:\n    - {type: conv2d, filters: 3, kernel_size: 3}\n"
                      "    - {type: concatenate, inputs: [conv2d, input]}\n    - {type: flatten}\n") ==
          "g.yaml:5:7: layer 'concatenate' (concatenate): joins along the last axis, so all other axes must match, "
          "but 'conv2d' (None, 2, 2, 3) and 'input' (None, 4, 4, 2) differ");
}
