#include "dist/stall_watch.hpp"

#include <atomic>

namespace gputrain::dist {

namespace {
// One word, so that a reader never sees one step's epoch with another's step.
std::atomic<uint64_t> noted{0};
}  // namespace

void note_step(int64_t epoch, int64_t step) {
    noted.store((static_cast<uint64_t>(epoch) << 32) | static_cast<uint32_t>(step), std::memory_order_relaxed);
}

std::string step_text() {
    const uint64_t v = noted.load(std::memory_order_relaxed);
    const uint64_t epoch = v >> 32, step = v & 0xffffffffu;
    if (epoch == 0) return "outside a training step";
    return "epoch " + std::to_string(epoch) + ", step " + std::to_string(step);
}

}  // namespace gputrain::dist
