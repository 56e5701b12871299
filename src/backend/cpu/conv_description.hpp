// What runs the CPU backend's convolutions and GEMMs in this build and
// environment, in words, for `gputrain devices`: "oneDNN 2.6.3 (...)" or
// "im2col + OpenBLAS (...)"; "oneDNN, small shapes by ..." or "OpenBLAS ...".
#pragma once

#include <string>

namespace gputrain {

std::string cpu_conv_description();
std::string cpu_gemm_description();

}  // namespace gputrain
