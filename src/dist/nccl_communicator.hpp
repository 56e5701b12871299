// One NCCL rank as a Communicator (CUDA builds only; includes CUDA and NCCL).
// timeout_seconds > 0: every collective waits for its stream with that
// deadline, watching NCCL's asynchronous errors, and aborts the communicator
// when it passes (multi-worker runs); 0: plain stream synchronisation.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>

#include "dist/communicator.hpp"

namespace gputrain::dist {

std::unique_ptr<Communicator> make_nccl_communicator(ncclComm_t comm, cudaStream_t stream, int rank, int size,
                                                     int device, double timeout_seconds);

}  // namespace gputrain::dist
