// CUDA_VISIBLE_DEVICES in words, for the messages that explain why the driver
// shows no GPU or fewer than expected. CUDA takes a comma-separated list of
// GPU indices or UUIDs (GPU-..., MIG-...) and stops at the first entry that is
// not one: "0,x,1" shows GPU 0 only, "-1" or "" none.
#pragma once

#include <string>

namespace gputrain::device {

// What is wrong with `value` (the variable's text), as one clause naming the
// variable and what to do; "" when it is a plain list of GPUs.
std::string visible_devices_problem(const std::string& value);

}  // namespace gputrain::device
