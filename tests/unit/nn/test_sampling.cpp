// Sampling the next token (gputrain generate): temperature, top-k and top-p
// (nucleus) against probabilities worked out by hand, and the draws' counts
// against those probabilities.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/rng.hpp"
#include "nn/sampling.hpp"

using namespace gputrain;

namespace {

// Normalized weights.
std::vector<double> probabilities(const std::vector<float>& logits, const nn::SamplingRule& rule) {
    std::vector<double> w = nn::sampling_weights(logits, rule);
    double sum = 0;
    for (double v : w) sum += v;
    for (double& v : w) v /= sum;
    return w;
}

// log(p) logits: softmax gives p back.
std::vector<float> logits_of(const std::vector<double>& p) {
    std::vector<float> out;
    for (double v : p) out.push_back(static_cast<float>(std::log(v)));
    return out;
}

}  // namespace

TEST_CASE("Sampling weights: temperature, top-k and top-p keep what they should") {
    const std::vector<float> logits = logits_of({0.1, 0.4, 0.2, 0.3});
    SECTION("no rule: the softmax") {
        const auto p = probabilities(logits, {});
        CHECK(p[0] == Approx(0.1));
        CHECK(p[1] == Approx(0.4));
        CHECK(p[2] == Approx(0.2));
        CHECK(p[3] == Approx(0.3));
    }
    SECTION("temperature 0.5 squares the odds") {
        const auto p = probabilities(logits, {0.5, 0, 1.0});
        const double s = 0.01 + 0.16 + 0.04 + 0.09;
        CHECK(p[1] == Approx(0.16 / s));
        CHECK(p[0] == Approx(0.01 / s));
    }
    SECTION("top-p 0.69: 0.4 + 0.3 reach it, the rest is left out") {
        const auto p = probabilities(logits, {1.0, 0, 0.69});
        CHECK(p[1] == Approx(0.4 / 0.7));
        CHECK(p[3] == Approx(0.3 / 0.7));
        CHECK(p[0] == 0);
        CHECK(p[2] == 0);
    }
    SECTION("top-p just above a sum takes the next token too") {
        const auto p = probabilities(logits, {1.0, 0, 0.71});
        CHECK(p[2] == Approx(0.2 / 0.9));
        CHECK(p[0] == 0);
    }
    SECTION("a tiny top-p keeps the most likely token alone (greedy)") {
        const auto p = probabilities(logits, {1.0, 0, 1e-9});
        CHECK(p == std::vector<double>{0, 1, 0, 0});
    }
    SECTION("top-p just below 1 drops only the far tail; 1 keeps it") {
        const std::vector<float> tail = logits_of({0.5, 0.5 - 1e-9, 1e-9});
        CHECK(probabilities(tail, {1.0, 0, 0.999999})[2] == 0);
        CHECK(probabilities(tail, {1.0, 0, 0.999999})[1] > 0);
        CHECK(probabilities(tail, {1.0, 0, 1.0})[2] > 0);
    }
    SECTION("top-k first, then top-p over what top-k kept") {
        // top-k 3 keeps 0.4, 0.3, 0.2 (renormalized 4/9, 3/9, 2/9); top-p 0.5 then keeps 4/9 and 3/9.
        const auto p = probabilities(logits, {1.0, 3, 0.5});
        CHECK(p[1] == Approx(4.0 / 7.0));
        CHECK(p[3] == Approx(3.0 / 7.0));
        CHECK(p[2] == 0);
        CHECK(p[0] == 0);
    }
    SECTION("ties: top-p keeps the lower id first") {
        const auto p = probabilities(logits_of({0.25, 0.25, 0.25, 0.25}), {1.0, 0, 0.5});
        CHECK(p == std::vector<double>{0.5, 0.5, 0, 0});
    }
}

TEST_CASE("Scores that are not finite, or that the temperature overflows, are an error, not token 0") {
    Rng rng(1);
    REQUIRE_THROWS_WITH(nn::sample_token({0.5f, NAN, 0.1f}, {}, rng),
                        "the model's score of token 1 is NaN: its weights have diverged (resume from an earlier "
                        "checkpoint)");
    REQUIRE_THROWS_WITH(nn::sample_token({INFINITY, 0.1f}, {}, rng),
                        "the model's score of token 0 is infinite: its weights have diverged (resume from an earlier "
                        "checkpoint)");
    REQUIRE_THROWS_WITH(nn::sample_token({3e38f, 0.1f}, {1e-300, 0, 1.0}, rng),
                        Catch::Contains("overflows the model's scores; give a larger temperature"));
}

TEST_CASE("Sampled tokens follow the kept probabilities and never leave the nucleus") {
    const std::vector<float> logits = logits_of({0.05, 0.45, 0.15, 0.35});
    const nn::SamplingRule rule{1.0, 0, 0.75};  // keeps 0.45 and 0.35: 9/16 and 7/16
    Rng rng(11);
    std::vector<int> counts(4, 0);
    const int draws = 40000;
    for (int i = 0; i < draws; ++i) ++counts[static_cast<size_t>(nn::sample_token(logits, rule, rng))];
    CHECK(counts[0] == 0);
    CHECK(counts[2] == 0);
    // Binomial standard deviation sqrt(n p (1 - p)) ~ 99: within 5 of them.
    CHECK(std::abs(counts[1] - draws * 9.0 / 16.0) < 500);
    CHECK(std::abs(counts[3] - draws * 7.0 / 16.0) < 500);
    // The same seed, the same tokens.
    Rng again(11);
    std::vector<int> second(4, 0);
    for (int i = 0; i < draws; ++i) ++second[static_cast<size_t>(nn::sample_token(logits, rule, again))];
    CHECK(second == counts);
}
