// Sampling the next token from a model's logits (gputrain generate):
// temperature, then top-k, then top-p (nucleus), then one uniform draw.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.hpp"

namespace gputrain::nn {

struct SamplingRule {
    double temperature = 1.0;  // > 0: logits are divided by it
    int64_t top_k = 0;         // keep the k most likely tokens (0: all)
    double top_p = 1.0;        // in (0, 1]: keep the fewest most likely tokens whose probability reaches p
};

// The weights the draw uses: exp(logit / T - max), 0 for the tokens top_k
// and top_p leave out (not normalized; the most likely token always stays).
// Ties in top-k keep every token equal to the k-th; in top-p the lower id
// comes first.
std::vector<double> sampling_weights(const std::vector<float>& logits, const SamplingRule& rule);

// Error when a logit is not finite, or the temperature makes one overflow.
//
// One id drawn from sampling_weights with one draw of `rng`.
int64_t sample_token(const std::vector<float>& logits, const SamplingRule& rule, Rng& rng);

}  // namespace gputrain::nn
