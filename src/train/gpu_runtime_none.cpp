// CPU-only builds: there is no GPU backend to make.
#include "core/error.hpp"
#include "train/gpu_runtime.hpp"

namespace gputrain::train {

namespace {
[[noreturn]] void not_built() {
    throw ConfigError("this gputrain was built without CUDA (meson -Dcuda=disabled, or no CUDA toolkit found); "
                      "rebuild with -Dcuda=enabled to train on GPUs, or use --device cpu");
}
}  // namespace

bool gpu_runtime_built() { return false; }

std::unique_ptr<Backend> make_gpu_backend(int) { not_built(); }

std::vector<std::unique_ptr<dist::Communicator>> make_gpu_communicators(const std::vector<int>&,
                                                                        const std::vector<Backend*>&,
                                                                        config::CommunicatorKind, size_t,
                                                                        dist::ProcessGroup*) {
    not_built();
}

}  // namespace gputrain::train
