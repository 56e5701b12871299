// run_on_replicas: runs fn(replica) on one thread per replica and joins them;
// the first exception thrown by any replica is rethrown on the caller's thread.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "train/replica.hpp"

namespace gputrain::train {

inline void run_on_replicas(std::vector<std::unique_ptr<Replica>>& replicas, const std::function<void(Replica&)>& fn) {
    std::vector<std::exception_ptr> errors(replicas.size());
    std::vector<std::thread> threads;
    for (size_t i = 1; i < replicas.size(); ++i) {
        threads.emplace_back([&, i] {
            try {
                fn(*replicas[i]);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        });
    }
    try {
        fn(*replicas[0]);
    } catch (...) {
        errors[0] = std::current_exception();
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace gputrain::train
