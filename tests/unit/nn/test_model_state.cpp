// Model with image layers: trainable parameters vs non-trainable state
// (separate buffers, named views, initial values), Glorot fans of conv
// kernels, Dense's initialization pinned, the shared workspace, the summary,
// and the collectives of a step without rows.
#include <catch2/catch.hpp>

#include <cmath>

#include "backend/cpu/cpu_backend.hpp"
#include "core/rng.hpp"
#include "model_specs.hpp"
#include "nn/model.hpp"

using namespace gputrain;
using specs::layer;

namespace {

config::ModelConfig small_cnn(const std::string& sync = "false") {
    config::ModelConfig mc;
    mc.input_shape = {8, 8, 1};
    mc.layers = {layer("conv2d", {{"filters", "4"}, {"kernel_size", "3"}, {"padding", "same"}, {"activation", "relu"}}),
                 layer("batch_norm", {{"sync", sync}}),
                 layer("max_pool2d"),
                 layer("conv2d", {{"filters", "3"}, {"kernel_size", "2,3"}}),
                 layer("global_avg_pool2d"),
                 layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    return mc;
}

config::LossConfig sparse_ce() { return config::LossConfig{}; }

struct CallLog : nn::CrossReplica {
    std::vector<size_t> counts;
    void allreduce_sum(float*, size_t count) override { counts.push_back(count); }
};

}  // namespace

TEST_CASE("Batch norm's moving statistics live in the state buffer, not with the parameters") {
    CpuBackend be;
    nn::Model model(small_cnn(), sparse_ce(), be, 4, 3);
    std::vector<std::string> names;
    for (const auto& v : model.params()) names.push_back(v.name);
    REQUIRE(names == std::vector<std::string>{"conv2d/kernel", "conv2d/bias", "batch_norm/gamma", "batch_norm/beta",
                                              "conv2d_1/kernel", "conv2d_1/bias", "dense/kernel", "dense/bias"});
    REQUIRE(model.params()[0].shape == Shape{4, 3, 3, 1});
    REQUIRE(model.params()[4].shape == Shape{3, 2, 3, 4});
    const size_t trainable = 36 + 4 + 4 + 4 + 72 + 3 + 9 + 3;
    REQUIRE(model.param_count() == trainable);
    REQUIRE(model.state().size() == 2);
    REQUIRE(model.state()[0].name == "batch_norm/moving_mean");
    REQUIRE(model.state()[1].name == "batch_norm/moving_variance");
    REQUIRE(model.state()[1].offset == 4);
    REQUIRE(model.state_count() == 8);
    const std::vector<float> state(model.state_data(), model.state_data() + 8);
    REQUIRE(state == std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1});
    // gamma ones, beta zeros
    for (size_t i = 0; i < 4; ++i) {
        REQUIRE(model.param_data()[model.params()[2].offset + i] == 1.0f);
        REQUIRE(model.param_data()[model.params()[3].offset + i] == 0.0f);
    }

    const std::string s = model.summary();
    CHECK_THAT(s, Catch::Contains("conv2d (conv2d) 3x3 same relu"));
    CHECK_THAT(s, Catch::Contains("(None, 8, 8, 4)"));
    CHECK_THAT(s, Catch::Contains("max_pool2d (max_pool2d) 2x2"));
    CHECK_THAT(s, Catch::Contains("(None, 4, 4, 4)"));
    CHECK_THAT(s, Catch::Contains("conv2d_1 (conv2d) 2x3 valid"));
    CHECK_THAT(s, Catch::Contains("(None, 3, 2, 3)"));
    CHECK_THAT(s, Catch::Contains("global_avg_pool2d (global_avg_pool2d)"));
    CHECK_THAT(s, Catch::Contains("Total params: " + std::to_string(trainable + 8)));
    CHECK_THAT(s, Catch::Contains("Trainable params: " + std::to_string(trainable)));
    CHECK_THAT(s, Catch::Contains("Non-trainable params: 8"));
    // The batch_norm row counts its 4 + 4 + 8 values, as Keras does.
    CHECK_THAT(s, Catch::Matches("(.|\\n)*batch_norm \\(batch_norm\\) +\\(None, 8, 8, 4\\) +16\\n(.|\\n)*"));
}

TEST_CASE("Conv kernels use Keras' Glorot fans; Dense's initialization is unchanged") {
    CpuBackend be;
    nn::Model model(small_cnn(), sparse_ce(), be, 2, 3);
    const auto& k = model.params()[4];  // [3, 2, 3, 4]: fan_in 2*3*4, fan_out 2*3*3
    const float limit = std::sqrt(6.0f / (24 + 18));
    float largest = 0;
    for (size_t i = 0; i < k.count; ++i) largest = std::max(largest, std::abs(model.param_data()[k.offset + i]));
    REQUIRE(largest <= limit);
    REQUIRE(largest > 0.85f * limit);  // 72 draws: the shape-based limit sqrt(6/(24+3)) would exceed it

    // Dense kernels draw from Rng(seed) in order, (2u - 1) * sqrt(6 / (fan_in + fan_out)), bit for bit.
    nn::Model mlp(specs::mlp({20}, 30, 5), sparse_ce(), be, 1, 99);
    Rng rng(99);
    const float dense_limit = static_cast<float>(std::sqrt(6.0 / 50.0));
    for (size_t i = 0; i < 600; ++i) REQUIRE(mlp.param_data()[i] == (2.0f * rng.uniform() - 1.0f) * dense_limit);
    REQUIRE(mlp.state_count() == 0);
    CHECK_THAT(mlp.summary(), Catch::Contains("Non-trainable params: 0"));
}

TEST_CASE("One workspace, sized for the hungriest layer at the largest batch") {
    CpuBackend be;
    be.set_conv_path(gputrain::CpuConvPath::im2col);  // oneDNN's convolutions need none
    const int64_t max_rows = 5;
    nn::Model model(small_cnn(), sparse_ce(), be, max_rows, 3);
    Conv2dGeometry first;
    first.batch = 5;
    first.in_h = first.in_w = first.out_h = first.out_w = 8;
    first.in_c = 1;
    first.out_c = 4;
    first.kernel_h = first.kernel_w = 3;
    first.pad_top = first.pad_left = 1;
    Conv2dGeometry second;
    second.batch = 5;
    second.in_h = second.in_w = 4;
    second.in_c = 4;
    second.out_h = 3;
    second.out_w = 2;
    second.out_c = 3;
    second.kernel_h = 2;
    second.kernel_w = 3;
    const size_t expected = std::max(be.conv2d_workspace_bytes(first), be.conv2d_workspace_bytes(second));
    REQUIRE(expected > 0);
    REQUIRE(model.workspace_bytes() == expected);
}

TEST_CASE("A step without rows joins the same collectives as a step with rows, with zero gradients") {
    CpuBackend be;
    nn::Model model(small_cnn("true"), sparse_ce(), be, 4, 3);
    std::vector<float> x(4 * 64, 0.5f);
    for (size_t i = 0; i < x.size(); i += 3) x[i] = 0.1f * static_cast<float>(i % 7);
    const std::vector<int32_t> labels{0, 1, 2, 1};
    float stats[2] = {0, 0};
    CallLog with_rows, without_rows;
    nn::RunContext ctx{be, true};
    ctx.cross_replica = &with_rows;
    model.forward_backward(ctx, x.data(), labels.data(), 4, 0.25f, stats);
    REQUIRE(with_rows.counts == std::vector<size_t>{9, 8});  // [sums of x, x^2, count] then [sums of dy, dy*xhat]
    ctx.cross_replica = &without_rows;
    model.forward_backward(ctx, x.data(), labels.data(), 0, 0.25f, stats);
    REQUIRE(without_rows.counts == with_rows.counts);
    for (size_t i = 0; i < model.param_count(); ++i) REQUIRE(model.grad_data()[i] == 0.0f);
}

// ---- trainable: false ----

namespace {

const nn::ParamView* find_view(const std::vector<nn::ParamView>& views, const std::string& name) {
    for (const auto& v : views)
        if (v.name == name) return &v;
    return nullptr;
}

std::vector<float> values(const float* base, const nn::ParamView& v) {
    return std::vector<float>(base + v.offset, base + v.offset + v.count);
}

}  // namespace

TEST_CASE("A frozen layer's weights move to the state, after the moving statistics, with their initial values") {
    CpuBackend be;
    config::ModelConfig plain = small_cnn(), frozen = small_cnn();
    frozen.layers[0].params["trainable"] = "false";  // conv2d
    frozen.layers[1].params["trainable"] = "false";  // batch_norm (in front: runs in inference mode)
    nn::Model a(plain, sparse_ce(), be, 4, 3), b(frozen, sparse_ce(), be, 4, 3);
    std::vector<std::string> names;
    for (const auto& v : b.params()) names.push_back(v.name);
    REQUIRE(names == std::vector<std::string>{"conv2d_1/kernel", "conv2d_1/bias", "dense/kernel", "dense/bias"});
    REQUIRE(b.param_count() == 72 + 3 + 9 + 3);
    names.clear();
    for (const auto& v : b.state()) names.push_back(v.name);
    REQUIRE(names == std::vector<std::string>{"conv2d/kernel", "conv2d/bias", "batch_norm/gamma", "batch_norm/beta",
                                              "batch_norm/moving_mean", "batch_norm/moving_variance"});
    // Nothing left that training changes: the frozen batch norm keeps its statistics.
    REQUIRE(b.averaged_state_count() == 0);
    REQUIRE(a.averaged_state_count() == 8);
    REQUIRE(b.frozen(0));
    REQUIRE(!b.frozen(3));
    // Freezing draws no other initial values: every tensor as in the plain model.
    for (const auto& v : a.params()) {
        const nn::ParamView* in_b = find_view(b.params(), v.name);
        const float* base_b = b.param_data();
        if (!in_b) {
            in_b = find_view(b.state(), v.name);
            base_b = b.state_data();
        }
        REQUIRE(in_b);
        INFO(v.name);
        REQUIRE(values(a.param_data(), v) == values(base_b, *in_b));
    }
    const std::string summary = b.summary({"conv2d"});
    const size_t line = summary.find("conv2d (conv2d)");
    REQUIRE(line != std::string::npos);
    const std::string first_row = summary.substr(line, summary.find('\n', line) - line);
    INFO(first_row);
    REQUIRE(first_row.find(" frozen +") != std::string::npos);
    REQUIRE(summary.find("Trainable params: 87") != std::string::npos);
}

TEST_CASE("A frozen layer's weights stay put through a training step; the trainable ones move") {
    CpuBackend be;
    config::ModelConfig mc;
    mc.input_shape = {6};
    mc.layers = {layer("dense", {{"units", "5"}, {"activation", "tanh"}}),
                 layer("dense", {{"units", "4"}, {"activation", "tanh"}, {"trainable", "false"}}),
                 layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    nn::Model m(mc, sparse_ce(), be, 4, 11);
    REQUIRE(m.param_count() == 6 * 5 + 5 + 3 * 4 + 3);
    std::vector<float> x(4 * 6);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * static_cast<float>(i));
    const std::vector<int32_t> labels{0, 2, 1, 2};
    std::vector<float> stats(2, 0.0f);
    const std::vector<float> state_before(m.state_data(), m.state_data() + m.state_count());
    nn::RunContext ctx{be, true};
    m.forward_backward(ctx, x.data(), labels.data(), 4, 0.25f, stats.data());
    // The first layer's gradient flows back through the frozen one: not zero.
    double first = 0.0;
    for (size_t i = 0; i < 30; ++i) first += std::fabs(m.grad_data()[i]);
    REQUIRE(first > 0.0);
    REQUIRE(std::vector<float>(m.state_data(), m.state_data() + m.state_count()) == state_before);
}

TEST_CASE("trainable: false errors: no weights to freeze; a frozen batch norm after a trainable layer") {
    CpuBackend be;
    config::ModelConfig mc = small_cnn();
    mc.layers[2].params["trainable"] = "false";  // max_pool2d
    REQUIRE_THROWS_WITH(nn::Model(mc, sparse_ce(), be, 4, 3),
                        Catch::Contains("trainable: unknown parameter for max_pool2d"));
    mc = small_cnn();
    mc.layers[1].params["trainable"] = "false";  // batch_norm after the trainable conv2d
    REQUIRE_THROWS_WITH(nn::Model(mc, sparse_ce(), be, 4, 3),
                        Catch::Contains("a frozen batch_norm runs in inference mode"));
    mc.layers[1].params["trainable"] = "maybe";
    REQUIRE_THROWS_WITH(nn::Model(mc, sparse_ce(), be, 4, 3), Catch::Contains("trainable"));
}
