// A dense layer tied to an embedding (`tie_weights`): its kernel is the
// table transposed, held once by the model; the table's gradient is the sum
// of the head's and the lookup's. Checked by finite differences on the layer
// and through whole models, against an untied twin, and its errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "../train/recording_backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"
#include "layer_harness.hpp"
#include "model_specs.hpp"
#include "nn/dense.hpp"
#include "nn/model.hpp"

using namespace gputrain;
using harness::LayerUnderTest;

namespace {

config::LossConfig logits_loss() {
    config::LossConfig l;
    l.name = config::LossKind::sparse_categorical_crossentropy;
    l.from_logits = true;
    return l;
}

// A tiny GPT: ids (3 positions) over a vocabulary of 5, width 4, the head
// tied to the token table.
config::ModelConfig tied_gpt(std::map<std::string, std::string> head = {}) {
    config::ModelConfig m;
    m.input_shape = {3};
    head.emplace("units", "5");
    head.emplace("tie_weights", "tok");
    m.layers = {specs::layer("embedding", {{"input_dim", "5"}, {"output_dim", "4"}}, "tok"),
                specs::layer("positional_embedding"), specs::layer("layer_norm"),
                specs::layer("dense", head, "head")};
    return m;
}

const std::vector<float> kIds{0, 4, 2, 2, 1, 4};  // 2 samples of 3 positions; ids repeat
const std::vector<int32_t> kLabels{4, 2, 2, 1, 4, 0};

double total_loss(nn::Model& model, CpuBackend& be, const std::vector<float>& x, const std::vector<int32_t>& y,
                  int rows) {
    float stats[2] = {0, 0};
    nn::RunContext ctx{be, false};
    model.evaluate(ctx, x.data(), y.data(), rows, stats);
    return stats[0];
}

// Every trainable float's gradient (the tied table's included) against
// central differences of the whole model's loss.
void check_model_gradients(nn::Model& model, CpuBackend& be) {
    const int rows = 2;
    float stats[2] = {0, 0};
    nn::RunContext ctx{be, true};
    model.forward_backward(ctx, kIds.data(), kLabels.data(), rows, 1.0f, stats);
    REQUIRE(stats[0] == Approx(total_loss(model, be, kIds, kLabels, rows)).epsilon(1e-5));
    const std::vector<float> analytic(model.grad_data(), model.grad_data() + model.param_count());
    // Another step gives the same gradients: the head overwrites, the lookup adds to that.
    model.forward_backward(ctx, kIds.data(), kLabels.data(), rows, 1.0f, stats);
    REQUIRE(std::equal(analytic.begin(), analytic.end(), model.grad_data()));
    float* p = model.param_data();
    const float h = 1e-3f;
    for (size_t i = 0; i < model.param_count(); ++i) {
        const float keep = p[i];
        p[i] = keep + h;
        const double up = total_loss(model, be, kIds, kLabels, rows);
        p[i] = keep - h;
        const double down = total_loss(model, be, kIds, kLabels, rows);
        p[i] = keep;
        harness::check_close(analytic[i], (up - down) / (2 * h), "param", i);
    }
}

std::string error_of(const config::ModelConfig& mc) {
    CpuBackend be;
    try {
        nn::Model m(mc, logits_loss(), be, 1, 1);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("A tied dense layer: x E^T + b, and its gradients (input, bias, table) by finite differences", "[tie]") {
    const bool use_bias = GENERATE(true, false);
    const Activation act = GENERATE(Activation::linear, Activation::tanh);
    INFO((use_bias ? "bias" : "no bias") << ", " << activation_name(act));
    // units 5 (the vocabulary), input width 3 (the table's width), 2 positions per sample.
    LayerUnderTest t(std::make_unique<nn::Dense>(5, act, use_bias, "tok"), {2, 3}, 2);
    REQUIRE(t.out_shape == Shape{2, 5});
    REQUIRE(t.params.size() == (use_bias ? 1u : 0u));  // no kernel of its own
    std::vector<float> table = harness::random_vector(15, 21), table_grad(15, 0.0f);
    auto& dense = static_cast<nn::Dense&>(*t.layer);
    dense.tie(table.data(), table_grad.data());
    REQUIRE(dense.detail() == (act == Activation::linear ? "tied to tok" : "tanh, tied to tok"));

    const std::vector<float> x = harness::random_vector(t.in_size(), 3);
    nn::RunContext ctx{t.backend, true};
    std::vector<float> y(t.out_size());
    t.layer->forward(ctx, x.data(), y.data(), t.rows);
    for (size_t r = 0; r < 4; ++r)
        for (size_t v = 0; v < 5; ++v) {
            double z = use_bias ? t.params[0][v] : 0.0;
            for (size_t c = 0; c < 3; ++c) z += static_cast<double>(x[r * 3 + c]) * table[v * 3 + c];
            REQUIRE(y[r * 5 + v] == Approx(act == Activation::tanh ? std::tanh(z) : z).margin(1e-6));
        }
    // dx and the bias against finite differences (the harness), then the table.
    harness::gradient_check(t, ctx);
    const std::vector<float> w = harness::random_vector(t.out_size(), 8);
    std::vector<float> dx(t.in_size());
    std::fill(table_grad.begin(), table_grad.end(), 123.0f);  // overwritten, not added to
    t.layer->forward(ctx, x.data(), y.data(), t.rows);
    t.layer->backward(ctx, x.data(), y.data(), w.data(), dx.data(), t.rows);
    const std::vector<float> analytic = table_grad;
    const float h = 1e-3f;
    for (size_t i = 0; i < table.size(); ++i) {
        const float keep = table[i];
        table[i] = keep + h;
        const double up = t.objective(ctx, x, w);
        table[i] = keep - h;
        const double down = t.objective(ctx, x, w);
        table[i] = keep;
        harness::check_close(analytic[i], (up - down) / (2.0 * h), "d_table", i);
    }
}

TEST_CASE("A GPT with a tied head: every gradient, the shared table's included, by finite differences", "[tie]") {
    CpuBackend be;
    SECTION("the head with a bias") {
        nn::Model model(tied_gpt(), logits_loss(), be, 2, 5);
        // The table once: tok/embeddings, positional, layer norm, the head's bias only.
        std::vector<std::string> names;
        for (const auto& v : model.params()) names.push_back(v.name);
        REQUIRE(names == std::vector<std::string>{"tok/embeddings", "positional_embedding/embeddings",
                                                  "layer_norm/gamma", "layer_norm/beta", "head/bias"});
        REQUIRE(model.param_count() == 20 + 12 + 4 + 4 + 5);
        check_model_gradients(model, be);
    }
    SECTION("no bias: the head has no tensor of its own") {
        nn::Model model(tied_gpt({{"use_bias", "false"}}), logits_loss(), be, 2, 5);
        REQUIRE(model.param_count() == 20 + 12 + 4 + 4);
        REQUIRE(model.layer_param_offsets()[3] == model.layer_param_offsets()[4]);
        check_model_gradients(model, be);
    }
    SECTION("a softmax head fused with the loss") {
        config::LossConfig loss = logits_loss();
        loss.from_logits = false;
        nn::Model model(tied_gpt({{"activation", "softmax"}}), loss, be, 2, 5);
        REQUIRE(model.fused_softmax());
        check_model_gradients(model, be);
    }
    SECTION("the tied layer in the middle (tanh), read by another dense layer") {
        config::ModelConfig mc;
        mc.input_shape = {3};
        mc.layers = {specs::layer("embedding", {{"input_dim", "5"}, {"output_dim", "4"}}),
                     specs::layer("dense", {{"units", "5"}, {"activation", "tanh"}, {"tie_weights", "embedding"}}),
                     specs::layer("dense", {{"units", "5"}})};
        nn::Model model(mc, logits_loss(), be, 2, 9);
        check_model_gradients(model, be);
    }
}

TEST_CASE("A tied head computes what an untied one computes with the table's transpose as its kernel", "[tie]") {
    CpuBackend be;
    nn::Model tied(tied_gpt(), logits_loss(), be, 2, 5);
    config::ModelConfig untied_config = tied_gpt();
    untied_config.layers[3].params.erase("tie_weights");
    nn::Model untied(untied_config, logits_loss(), be, 2, 5);
    REQUIRE(untied.param_count() == tied.param_count() + 20);
    // Copy the weights over by name; the untied kernel [4, 5] is the table [5, 4] transposed.
    const auto view = [](nn::Model& m, const std::string& name) -> const nn::ParamView& {
        for (const auto& v : m.params())
            if (v.name == name) return v;
        FAIL("no tensor " << name);
        return m.params()[0];
    };
    for (const auto& v : tied.params())
        std::copy_n(tied.param_data() + v.offset, v.count, untied.param_data() + view(untied, v.name).offset);
    const float* table = tied.param_data() + view(tied, "tok/embeddings").offset;
    float* kernel = untied.param_data() + view(untied, "head/kernel").offset;
    for (size_t v = 0; v < 5; ++v)
        for (size_t c = 0; c < 4; ++c) kernel[c * 5 + v] = table[v * 4 + c];
    // Biases away from zero.
    for (size_t i = 0; i < 5; ++i) {
        tied.param_data()[view(tied, "head/bias").offset + i] = 0.1f * static_cast<float>(i) - 0.2f;
        untied.param_data()[view(untied, "head/bias").offset + i] = 0.1f * static_cast<float>(i) - 0.2f;
    }
    const double a = total_loss(tied, be, kIds, kLabels, 2), b = total_loss(untied, be, kIds, kLabels, 2);
    REQUIRE(a == Approx(b).epsilon(1e-6));

    // The same gradients: the tied table's is the untied table's plus the kernel's, transposed.
    float stats[2] = {0, 0};
    nn::RunContext ctx{be, true};
    tied.forward_backward(ctx, kIds.data(), kLabels.data(), 2, 1.0f, stats);
    untied.forward_backward(ctx, kIds.data(), kLabels.data(), 2, 1.0f, stats);
    const float* dt = tied.grad_data() + view(tied, "tok/embeddings").offset;
    const float* de = untied.grad_data() + view(untied, "tok/embeddings").offset;
    const float* dk = untied.grad_data() + view(untied, "head/kernel").offset;
    for (size_t v = 0; v < 5; ++v)
        for (size_t c = 0; c < 4; ++c)
            REQUIRE(dt[v * 4 + c] == Approx(de[v * 4 + c] + dk[c * 5 + v]).margin(1e-6));

    // An inference model (predict, evaluate) ties the same way.
    nn::Model inference(tied_gpt(), logits_loss(), be, 2, 5, nn::ModelUse::inference);
    std::copy_n(tied.param_data(), tied.param_count(), inference.param_data());
    REQUIRE(total_loss(inference, be, kIds, kLabels, 2) == total_loss(tied, be, kIds, kLabels, 2));
}

TEST_CASE("A tied head: the summary counts the table once and says what it is tied to", "[tie]") {
    CpuBackend be;
    nn::Model model(tied_gpt(), logits_loss(), be, 2, 5);
    const std::string s = model.summary();
    INFO(s);
    REQUIRE(s.find("head (dense) tied to tok") != std::string::npos);
    REQUIRE(s.find("Total params: 45 ") != std::string::npos);
    // Frozen together (trainable: false on both): the table and the head's bias in the state, no error.
    config::ModelConfig frozen_config = tied_gpt({{"trainable", "false"}});
    frozen_config.layers[0].params["trainable"] = "false";
    nn::Model frozen(frozen_config, logits_loss(), be, 2, 5);
    REQUIRE(frozen.param_count() == 12 + 4 + 4);
    REQUIRE(frozen.state_count() == 20 + 5);
    // Without a bias the frozen head has no tensor of its own, and is no "layer with no weights to freeze".
    frozen_config.layers[3].params["use_bias"] = "false";
    nn::Model no_bias(frozen_config, logits_loss(), be, 2, 5);
    REQUIRE(no_bias.state_count() == 20);
    float stats[2] = {0, 0};
    nn::RunContext ctx{be, true};
    no_bias.forward_backward(ctx, kIds.data(), kLabels.data(), 2, 1.0f, stats);
    REQUIRE(std::isfinite(stats[0]));
}

TEST_CASE("tie_weights errors name the layer, the key and the fix", "[tie]") {
    config::ModelConfig mc = tied_gpt({{"tie_weights", "tk"}});
    CHECK(error_of(mc) == "test.yaml:3:21: model.layers[3] (dense 'head'): tie_weights: unknown layer 'tk' (did you "
                          "mean 'tok'?); name an embedding layer listed above it (tok)");
    mc = tied_gpt({{"tie_weights", "head"}});
    CHECK(error_of(mc) == "test.yaml:3:21: model.layers[3] (dense 'head'): tie_weights: names this layer itself; name "
                          "an embedding layer listed above it");
    mc = tied_gpt({{"tie_weights", "layer_norm"}});
    CHECK(error_of(mc) == "test.yaml:3:21: model.layers[3] (dense 'head'): tie_weights: 'layer_norm' is a layer_norm "
                          "layer; name an embedding layer, whose table becomes this layer's kernel");
    mc = tied_gpt({{"tie_weights", ""}});
    CHECK(error_of(mc) == "test.yaml:3:21: model.layers[3] (dense 'head'): tie_weights: is empty; name the embedding "
                          "layer whose table is this layer's kernel, e.g. tie_weights: embedding");
    mc = tied_gpt({{"units", "6"}});
    CHECK(error_of(mc) == "test.yaml:3:15: model.layers[3] (dense 'head'): units: 6 is not the input_dim 5 of "
                          "embedding 'tok' (tie_weights: the kernel is its table [5, 4] transposed); set units: 5");
    mc = tied_gpt();
    mc.layers[0].params["trainable"] = "false";
    CHECK(error_of(mc) == "test.yaml:3:7: model.layers[0] (embedding 'tok'): trainable: this layer is frozen "
                          "(trainable: false) and dense 'head', tied to it (tie_weights), is not; the tied table is "
                          "one weight: set trainable the same on both");
    CHECK(error_of(tied_gpt({{"trainable", "false"}})) ==
          "test.yaml:3:19: model.layers[3] (dense 'head'): trainable: this layer is frozen (trainable: false) and "
          "embedding 'tok', whose table is its kernel (tie_weights), is not; the tied table is one weight: set "
          "trainable the same on both");
    // The input width: a dense of 6 in front of the head.
    mc = tied_gpt();
    mc.layers.insert(mc.layers.begin() + 3, specs::layer("dense", {{"units", "6"}}));
    CHECK(error_of(mc) == "test.yaml:3:21: model.layers[4] (dense 'head'): tie_weights: the input is 6 wide, and the "
                          "output_dim of embedding 'tok' is 4 (the kernel is its table [5, 4] transposed); give this "
                          "layer inputs 4 wide");
    // Listed after the dense.
    mc.input_shape = {4};
    mc.layers = {specs::layer("dense", {{"units", "5"}, {"tie_weights", "late"}}, "head"),
                 specs::layer("embedding", {{"input_dim", "5"}, {"output_dim", "4"}}, "late")};
    CHECK(error_of(mc) == "test.yaml:3:21: model.layers[0] (dense 'head'): tie_weights: embedding 'late' is listed "
                          "after this layer; a tied dense layer comes after its embedding (list the embedding first)");
    // Two heads on one table.
    mc = tied_gpt();
    mc.layers.push_back(specs::layer("dense", {{"units", "5"}, {"tie_weights", "tok"}}, "head2"));
    mc.layers.back().inputs = {config::LayerInput{"layer_norm"}};
    mc.layers.push_back(specs::layer("add"));
    mc.layers.back().inputs = {config::LayerInput{"head"}, config::LayerInput{"head2"}};
    CHECK(error_of(mc) == "test.yaml:3:21: model.layers[4] (dense 'head2'): tie_weights: embedding 'tok' is tied to "
                          "'head' already; one dense layer ties to an embedding");
    // A model without an embedding.
    mc.input_shape = {4};
    mc.layers = {specs::layer("dense", {{"units", "5"}, {"tie_weights", "embedding"}})};
    CHECK(error_of(mc) == "test.yaml:3:21: model.layers[0] (dense): tie_weights: unknown layer 'embedding'; name an "
                          "embedding layer listed above it (the model has none)");
}

TEST_CASE("A tied head under 16-bit GEMMs: its own copies (the table's, transposed in use) give gemm()'s bits; "
          "no GEMM epilogue takes it", "[tie]") {
    // The recording backend emulates a GPU's bf16 GEMMs (tests/unit/train):
    // operands rounded inside gemm(), or the layers' own 16-bit copies.
    const auto gradients = [](bool copies, bool epilogues) {
        fixture::RecordingBackend be;
        be.set_bf16_gemm(true, copies);
        be.set_gemm_epilogues(epilogues);
        nn::Model model(tied_gpt(), logits_loss(), be, 2, 5);
        float stats[2] = {0, 0};
        nn::RunContext ctx{be, true};
        model.forward_backward(ctx, kIds.data(), kLabels.data(), 2, 1.0f, stats);
        std::vector<float> out(model.grad_data(), model.grad_data() + model.param_count());
        out.push_back(stats[0]);
        if (copies) CHECK(be.copied_gemms == 3);  // the head's three GEMMs, on copies
        CHECK(be.epilogue_calls == 0);
        return out;
    };
    const std::vector<float> rounding = gradients(false, false);
    CHECK(gradients(true, false) == rounding);
    CHECK(gradients(false, true) == rounding);
}
