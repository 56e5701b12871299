// GPU support as this build provides it. The build picks the implementation:
// gpu_runtime_cuda.cpp in CUDA builds, gpu_runtime_none.cpp in CPU-only
// builds (no #ifdef in function bodies).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "config/run_config.hpp"
#include "dist/communicator.hpp"
#include "dist/process_group.hpp"

namespace gputrain::train {

// Whether this binary was built with the CUDA backend.
bool gpu_runtime_built();

// One backend on GPU `device` (its stream, handles and memory pool).
std::unique_ptr<Backend> make_gpu_backend(int device);

// Communicators for GPU replicas: `kind` is nccl or device; `backends`
// are the replicas' GPU backends (rank i on devices[i]); max_count is the
// largest all-reduce in floats. With `processes` (a multi-worker run, nccl
// only) the communicators span every GPU of every worker.
std::vector<std::unique_ptr<dist::Communicator>> make_gpu_communicators(const std::vector<int>& devices,
                                                                        const std::vector<Backend*>& backends,
                                                                        config::CommunicatorKind kind,
                                                                        size_t max_count,
                                                                        dist::ProcessGroup* processes);

}  // namespace gputrain::train
