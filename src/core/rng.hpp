// Rng: a small, fully serializable random generator (xoshiro256**, seeded by
// splitmix64) so that shuffles, dropout masks and initial weights are
// reproducible and a checkpoint can store and restore the exact state.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace gputrain {

class Rng {
public:
    explicit Rng(uint64_t seed = 0) { reseed(seed); }

    void reseed(uint64_t seed) {
        uint64_t x = seed;
        for (auto& word : state_) word = splitmix64(x);
    }

    uint64_t next_u64() {
        const uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform in [0, 1) with 24 random bits (exact in float).
    float uniform() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }

    // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias negligible for n << 2^64).
    uint64_t below(uint64_t n) {
        return static_cast<uint64_t>((static_cast<unsigned __int128>(next_u64()) * n) >> 64);
    }

    // A new generator whose stream is independent of this one's (for per-replica streams).
    Rng split(uint64_t stream) const {
        Rng r(0);
        uint64_t x = state_[0] ^ (stream * 0x9E3779B97F4A7C15ull) ^ state_[3];
        for (auto& word : r.state_) word = splitmix64(x);
        return r;
    }

    const std::array<uint64_t, 4>& state() const { return state_; }
    void set_state(const std::array<uint64_t, 4>& s) { state_ = s; }

    // "s0,s1,s2,s3" in hex, for checkpoint metadata.
    std::string serialize() const;
    // Throws gputrain::DataError on a malformed string.
    void deserialize(const std::string& text);

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    static uint64_t splitmix64(uint64_t& x) {
        uint64_t z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    std::array<uint64_t, 4> state_{};
};

}  // namespace gputrain
