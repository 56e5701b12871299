// embedding and positional_embedding: values against the tables read by hand,
// the tables' gradients against finite differences.
#include "layer_harness.hpp"
#include "core/error.hpp"
#include "nn/embedding.hpp"

using namespace gputrain;
using harness::LayerUnderTest;

namespace {

// L = sum(y * w) and its finite differences over every table entry, with the
// ids fixed (they take no gradient).
void check_table_gradient(LayerUnderTest& t, const std::vector<float>& x) {
    nn::RunContext ctx{t.backend, true};
    const std::vector<float> w = harness::random_vector(t.out_size(), 11);
    std::vector<float> y(t.out_size()), dx(t.in_size(), 5.0f);
    t.layer->forward(ctx, x.data(), y.data(), t.rows);
    t.layer->backward(ctx, x.data(), y.data(), w.data(), dx.data(), t.rows);
    const std::vector<float> grad = t.grads[0];
    const float h = 1e-3f;
    for (size_t i = 0; i < t.params[0].size(); ++i) {
        const float keep = t.params[0][i];
        t.params[0][i] = keep + h;
        const double up = t.objective(ctx, x, w);
        t.params[0][i] = keep - h;
        const double down = t.objective(ctx, x, w);
        t.params[0][i] = keep;
        harness::check_close(grad[i], (up - down) / (2.0 * h), "d_table", i);
    }
}

}  // namespace

TEST_CASE("embedding looks up each id's row and sums the gradients of repeated ids", "[embedding]") {
    LayerUnderTest t(std::make_unique<nn::Embedding>(5, 3), {4}, 2);
    REQUIRE(t.out_shape == Shape{4, 3});
    const std::vector<float> ids{0, 4, 2, 2, 1, 1, 1, 3};  // repeated ids: their gradients add
    nn::RunContext ctx{t.backend, false};
    std::vector<float> y(t.out_size());
    t.layer->forward(ctx, ids.data(), y.data(), t.rows);
    for (size_t n = 0; n < ids.size(); ++n)
        for (size_t c = 0; c < 3; ++c)
            REQUIRE(y[n * 3 + c] == t.params[0][static_cast<size_t>(ids[n]) * 3 + c]);
    check_table_gradient(t, ids);
}

TEST_CASE("embedding gives NaN rows for ids outside its vocabulary and learns nothing from them", "[embedding]") {
    LayerUnderTest t(std::make_unique<nn::Embedding>(3, 2), {3}, 1);
    const std::vector<float> ids{1, 3, -1};
    nn::RunContext ctx{t.backend, true};
    std::vector<float> y(t.out_size()), dy(t.out_size(), 1.0f);
    t.layer->forward(ctx, ids.data(), y.data(), 1);
    REQUIRE(y[0] == t.params[0][2]);
    for (size_t i = 2; i < 6; ++i) REQUIRE(std::isnan(y[i]));
    t.layer->backward(ctx, ids.data(), y.data(), dy.data(), nullptr, 1);
    REQUIRE(t.grads[0] == std::vector<float>{0, 0, 1, 1, 0, 0});
}

TEST_CASE("positional_embedding adds row t of its table to position t", "[embedding]") {
    LayerUnderTest t(std::make_unique<nn::PositionalEmbedding>(0), {3, 2}, 2);
    REQUIRE(t.params[0].size() == 6);  // length defaults to the input's positions
    const std::vector<float> x = harness::random_vector(t.in_size(), 3);
    nn::RunContext ctx{t.backend, false};
    std::vector<float> y(t.out_size());
    t.layer->forward(ctx, x.data(), y.data(), 2);
    for (size_t r = 0; r < 2; ++r)
        for (size_t i = 0; i < 6; ++i) REQUIRE(y[r * 6 + i] == x[r * 6 + i] + t.params[0][i]);
    nn::RunContext train{t.backend, true};
    harness::gradient_check(t, train);
}

TEST_CASE("positional_embedding on one position reads the row of ctx.position", "[embedding]") {
    LayerUnderTest t(std::make_unique<nn::PositionalEmbedding>(4), {1, 2}, 1);
    REQUIRE(t.params[0].size() == 8);
    const std::vector<float> x{0.5f, -1.0f};
    nn::RunContext ctx{t.backend, false};
    ctx.position = 3;
    std::vector<float> y(2);
    t.layer->forward(ctx, x.data(), y.data(), 1);
    REQUIRE(y[0] == 0.5f + t.params[0][6]);
    REQUIRE(y[1] == -1.0f + t.params[0][7]);
    ctx.position = 4;
    REQUIRE_THROWS_WITH(t.layer->forward(ctx, x.data(), y.data(), 1),
                        "layer '' (positional_embedding): position 4 is past the table's 4 positions");
    // Positions past the table's are trained as zero gradients.
    LayerUnderTest shorter(std::make_unique<nn::PositionalEmbedding>(5), {3, 2}, 2);
    harness::gradient_check(shorter, nn::RunContext{shorter.backend, true});
}

TEST_CASE("positional_embedding refuses inputs it cannot place", "[embedding]") {
    nn::PositionalEmbedding flat(0);
    flat.set_name("pos");
    REQUIRE_THROWS_WITH(flat.build(Shape{8}), "layer 'pos' (positional_embedding): takes (positions, width), got "
                                              "(None, 8); put it after an embedding layer");
    nn::PositionalEmbedding short_table(4);
    short_table.set_name("pos");
    REQUIRE_THROWS_WITH(short_table.build(Shape{6, 3}),
                        "layer 'pos' (positional_embedding): the input has 6 positions but length is 4; raise "
                        "length or shorten model.input_shape");
}
