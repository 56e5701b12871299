// CUDA builds: GPU replicas are CudaBackends joined by NCCL or the device communicator.
#include "backend/cuda/cuda_backend.hpp"
#include "core/error.hpp"
#include "dist/gpu_communicators.hpp"
#include "train/gpu_runtime.hpp"

namespace gputrain::train {

bool gpu_runtime_built() { return true; }

std::unique_ptr<Backend> make_gpu_backend(int device) { return std::make_unique<CudaBackend>(device); }

std::vector<std::unique_ptr<dist::Communicator>> make_gpu_communicators(const std::vector<int>& devices,
                                                                        const std::vector<Backend*>& backends,
                                                                        config::CommunicatorKind kind,
                                                                        size_t max_count,
                                                                        dist::ProcessGroup* processes) {
    std::vector<void*> streams;
    for (Backend* b : backends) {
        auto* cuda = dynamic_cast<CudaBackend*>(b);
        if (!cuda) throw Error("internal: a GPU communicator was asked for a replica that is not on a GPU");
        streams.push_back(cuda->stream_handle());
    }
    if (processes) return dist::make_nccl_world_communicators(devices, streams, *processes);
    if (kind == config::CommunicatorKind::nccl) return dist::make_nccl_communicators(devices, streams);
    return dist::make_device_communicators(devices, streams, max_count);
}

}  // namespace gputrain::train
