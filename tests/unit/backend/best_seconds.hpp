// The timing rule of the backend's hand-run benchmarks (bench_conv,
// bench_gpt_ops): one warm-up call, then the fastest of `repetitions` runs
// (on a shared machine, other load only ever adds time).
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>

inline double best_seconds(int repetitions, const std::function<void()>& f) {
    f();  // warm caches and the BLAS thread pool
    double best = 1e30;
    for (int i = 0; i < repetitions; ++i) {
        const auto start = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
}
