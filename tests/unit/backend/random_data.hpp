// Uniform random test data for the backend tests, from a seed or a generator.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace test_data {

inline std::vector<float> random_vector(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

inline std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    return random_vector(n, rng, lo, hi);
}

}  // namespace test_data
