// run_on_replicas: runs fn(replica) on one thread per replica and joins them.
// When a replica fails, the communicators are aborted so that the others stop
// instead of waiting for it in a collective; the first error is rethrown on the
// caller's thread (the others' "stopped because another replica failed" are not).
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "train/replica.hpp"

namespace gputrain::train {

inline void run_on_replicas(std::vector<std::unique_ptr<Replica>>& replicas, const std::function<void(Replica&)>& fn) {
    std::mutex mutex;
    std::exception_ptr first_error;
    auto run = [&](size_t i) {
        try {
            replicas[i]->backend().bind_thread();
            fn(*replicas[i]);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex);
            if (!first_error) {
                first_error = std::current_exception();
                for (auto& r : replicas) r->abort();
            }
        }
    };
    std::vector<std::thread> threads;
    try {
        for (size_t i = 1; i < replicas.size(); ++i) threads.emplace_back(run, i);
    } catch (const std::system_error& e) {
        // The threads already started wait in a collective for the ones that
        // never will: abort it, join them, and report (a std::thread left
        // joinable would terminate the process).
        for (auto& r : replicas) r->abort();
        for (auto& t : threads) t.join();
        throw Error("cannot start replica thread " + std::to_string(threads.size() + 1) + " of " +
                    std::to_string(replicas.size()) + ": " + e.what() + "; use fewer replicas");
    }
    run(0);
    for (auto& t : threads) t.join();
    if (first_error) std::rethrow_exception(first_error);
}

}  // namespace gputrain::train
