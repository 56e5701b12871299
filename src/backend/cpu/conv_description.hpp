// What runs the CPU backend's convolutions in this build and environment, in
// words, for `gputrain devices`: "oneDNN 2.6.3 (...)" or "im2col + OpenBLAS (...)".
#pragma once

#include <string>

namespace gputrain {

std::string cpu_conv_description();

}  // namespace gputrain
