// Helpers for the CPU-vs-GPU parity tests: each test runs the same lambda on a
// CpuBackend and on a CudaBackend (same inputs, uploaded through the Backend
// interface) and compares what comes back.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cuda/cuda_backend.hpp"

namespace gpu_test {

using gputrain::Backend;
using gputrain::CpuBackend;
using gputrain::CudaBackend;
using gputrain::Precision;

// Backend memory that is released when the scope ends.
class Buffers {
public:
    explicit Buffers(Backend& backend) : backend_(backend) {}
    ~Buffers() {
        for (void* p : owned_) backend_.release(p);
    }
    Buffers(const Buffers&) = delete;
    Buffers& operator=(const Buffers&) = delete;

    template <class T>
    T* upload(const std::vector<T>& host) {
        T* p = zeros<T>(host.size());
        backend_.copy_to_device(p, host.data(), host.size() * sizeof(T));
        return p;
    }
    template <class T>
    T* zeros(size_t n) {
        T* p = static_cast<T*>(backend_.allocate_bytes(n * sizeof(T)));
        owned_.push_back(p);
        return p;
    }
    template <class T>
    std::vector<T> download(const T* p, size_t n) {
        std::vector<T> out(n);
        backend_.copy_to_host(out.data(), p, n * sizeof(T));
        return out;
    }

private:
    Backend& backend_;
    std::vector<void*> owned_;
};

inline std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& e : v) e = d(rng);
    return v;
}

inline std::vector<int32_t> random_labels(int rows, int cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> d(0, cols - 1);
    std::vector<int32_t> v(static_cast<size_t>(rows));
    for (auto& e : v) e = d(rng);
    return v;
}

// |gpu - cpu| <= rel * |cpu| + abs for every element (equal infinities and
// two NaNs count as equal); reports the first element that is not.
inline void require_close(const std::vector<float>& gpu, const std::vector<float>& cpu, double rel, double abs) {
    REQUIRE(gpu.size() == cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
        const double g = gpu[i], c = cpu[i];
        const bool same = g == c || (std::isnan(g) && std::isnan(c));
        if (same || std::abs(g - c) <= rel * std::abs(c) + abs) continue;
        INFO("element " << i << " of " << cpu.size() << ": gpu " << g << " cpu " << c << " (difference "
                        << std::abs(g - c) << ", allowed " << rel * std::abs(c) + abs << ")");
        REQUIRE(false);
    }
}

// Bit for bit.
inline void require_identical(const std::vector<float>& gpu, const std::vector<float>& cpu) {
    REQUIRE(gpu.size() == cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
        if (std::memcmp(&gpu[i], &cpu[i], sizeof(float)) == 0) continue;
        INFO("element " << i << " of " << cpu.size() << ": gpu " << gpu[i] << " cpu " << cpu[i]);
        REQUIRE(false);
    }
}

}  // namespace gpu_test
