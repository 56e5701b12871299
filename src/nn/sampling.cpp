#include "nn/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>

#include "core/error.hpp"

namespace gputrain::nn {

std::vector<double> sampling_weights(const std::vector<float>& logits, const SamplingRule& rule) {
    const size_t n = logits.size();
    std::vector<double> z(n);
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(logits[i]))
            throw Error("the model's score of token " + std::to_string(i) + " is " +
                        (std::isnan(logits[i]) ? "NaN" : "infinite") +
                        ": its weights have diverged (resume from an earlier checkpoint)");
        z[i] = static_cast<double>(logits[i]) / rule.temperature;
        if (!std::isfinite(z[i]))
            throw Error("--temperature " + std::to_string(rule.temperature) +
                        " overflows the model's scores; give a larger temperature");
    }
    if (rule.top_k > 0 && static_cast<size_t>(rule.top_k) < n) {
        std::vector<double> sorted = z;
        std::nth_element(sorted.begin(), sorted.begin() + (rule.top_k - 1), sorted.end(), std::greater<double>());
        const double kth = sorted[static_cast<size_t>(rule.top_k - 1)];
        for (double& v : z)
            if (v < kth) v = -INFINITY;
    }
    if (n == 0) return z;
    const double top = *std::max_element(z.begin(), z.end());
    for (double& v : z) v = std::exp(v - top);
    if (rule.top_p < 1.0) {
        // The most likely first (the lower id first among equals); keep each
        // while the probability before it is below p: the fewest that reach p.
        std::vector<size_t> order(n);
        std::iota(order.begin(), order.end(), size_t{0});
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return z[a] > z[b]; });
        double total = 0;
        for (double v : z) total += v;
        const double reach = rule.top_p * total;
        double before = 0;
        for (size_t i : order) {
            if (before >= reach && before > 0) {
                z[i] = 0;
                continue;
            }
            before += z[i];
        }
    }
    return z;
}

int64_t sample_token(const std::vector<float>& logits, const SamplingRule& rule, Rng& rng) {
    const std::vector<double> z = sampling_weights(logits, rule);
    const size_t n = z.size();
    double sum = 0;
    for (double v : z) sum += v;
    double u = static_cast<double>(rng.next_u64() >> 11) * 0x1.0p-53 * sum;
    for (size_t i = 0; i < n; ++i) {
        if (u < z[i]) return static_cast<int64_t>(i);
        u -= z[i];
    }
    // Rounding left u past the end: the last id with any weight.
    for (size_t i = n; i-- > 0;)
        if (z[i] > 0) return static_cast<int64_t>(i);
    return 0;
}

}  // namespace gputrain::nn
