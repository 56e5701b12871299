// Versions of the libraries a GPU run depends on, read at run time so that
// their absence is reported rather than fatal.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gputrain::device {

// cudnnGetVersion() from libcudnn.so.9; empty when the library is missing.
std::optional<int> read_cudnn_version(const char* soname = "libcudnn.so.9");
// ncclGetVersion() from libnccl.so.2; empty when the library is missing.
std::optional<int> read_nccl_version(const char* soname = "libnccl.so.2");

// The kernel module's version from /proc/driver/nvidia/version: used when
// NVML cannot say. Empty when the file is missing.
std::string read_nvrm_version(const char* path = "/proc/driver/nvidia/version");
// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..." -> "550.54.15".
std::string parse_nvrm_version(std::string_view text);

// cuDNN and NCCL encode versions the same way: major*10000 + minor*100 + patch
// (90100 -> "9.1.0"), and before that major*1000 + minor*100 + patch (8907 -> "8.9.7").
std::string format_library_version(int version);
// The CUDA driver's encoding: 12040 -> "12.4".
std::string format_cuda_version(int version);

}  // namespace gputrain::device
