// What this process is doing, for the stall watchdog's warning (mpi_world.cpp):
// the trainer notes each step before it runs; a stalled collective names it.
#pragma once

#include <cstdint>
#include <string>

namespace gputrain::dist {

// Epoch (1-based) and step within it (1-based) of the training step now
// running; 0, 0 outside training. Any thread; lock-free.
void note_step(int64_t epoch, int64_t step);

// "epoch 2, step 14", or "outside a training step" when none was noted.
std::string step_text();

}  // namespace gputrain::dist
