// predict_probabilities against a host forward pass of a one-layer model, for
// each way a classifier can end: softmax fused with the loss, logits under
// from_logits, and a softmax layer under from_logits (already probabilities).
#include <catch2/catch.hpp>

#include <cmath>

#include "train/predictor.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

// x (rows x 6) . kernel (6 x 3) + bias, then softmax when `softmax`.
std::vector<float> host_forward(const std::vector<float>& params, const std::vector<float>& x, int rows, bool softmax) {
    std::vector<float> out(static_cast<size_t>(rows) * 3);
    for (int r = 0; r < rows; ++r) {
        double z[3];
        for (int j = 0; j < 3; ++j) {
            z[j] = params[18 + j];
            for (int i = 0; i < 6; ++i) z[j] += double(x[r * 6 + i]) * params[i * 3 + j];
        }
        double top = std::max({z[0], z[1], z[2]}), sum = 0;
        for (double v : z) sum += std::exp(v - top);
        for (int j = 0; j < 3; ++j) out[r * 3 + j] = float(softmax ? std::exp(z[j] - top) / sum : z[j]);
    }
    return out;
}

}  // namespace

TEST_CASE("predict_probabilities gives the model's probabilities however its classifier ends") {
    struct Case {
        const char* activation;
        bool from_logits;
    };
    for (const Case c : {Case{"softmax", false}, Case{"linear", true}, Case{"softmax", true}}) {
        INFO(c.activation << (c.from_logits ? " under from_logits" : ""));
        auto cfg = fixture::small_job(1, 4);
        cfg.model.layers = {specs::layer("dense", {{"units", "3"}, {"activation", c.activation}})};
        cfg.loss.from_logits = c.from_logits;
        auto reps = fixture::replicas(cfg, 1);
        const auto params = fixture::params_of(*reps[0]);
        const auto x = fixture::blobs(10, 4).inputs;  // 10 rows: batches of 4, 4 and 2
        const auto got = train::predict_probabilities(*reps[0], x, 10);
        // Every ending is a softmax of x.W + b: a softmax layer under from_logits is not applied twice.
        const auto want = host_forward(params, x, 10, true);
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
    }
}
