// MemoryEstimate: what one replica allocates at the configured batch, for
// `gputrain summary`: weights, gradients, optimizer state, activations (layer
// outputs and the activation-gradient buffers), layer scratch and the input
// shard. Counted from the buffers a Model and Optimizer really allocate (built
// on the CPU); a GPU adds its library workspaces (cuBLAS, NCCL) on top.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "config/run_config.hpp"

namespace gputrain::train {

struct MemoryEstimate {
    int64_t rows_per_replica = 0;
    size_t params = 0;
    size_t optimizer_slots = 0;  // buffers of the parameters' size: Adam 2, SGD with momentum 1
    size_t weight_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0;
    size_t state_bytes = 0;  // non-trainable tensors (batch norm's moving statistics, frozen layers' weights)
    size_t ema_bytes = 0;    // training.ema: the average, and with evaluate the weights' place while validating
    size_t activation_bytes = 0, scratch_bytes = 0, input_bytes = 0;
    // The layers' shared workspace: one call's temporaries (a relu layer's
    // dz, a dense layer's 16-bit dz copy, the CPU's im2col columns; a GPU's
    // convolutions use cuDNN's workspace instead, sized there).
    size_t workspace_bytes = 0;
    // A GPU's 16-bit copies of GEMM inputs (training.cast_gemm_inputs): dense
    // layers' inputs and kernels, and gemm()'s scratch (dz's is in the workspace).
    size_t gemm_copy_bytes = 0;
    // The layer with the most trainable parameters (-1: none has any), for
    // messages that say what to make smaller.
    int largest_layer = -1;
    size_t largest_layer_params = 0;

    size_t total_bytes() const {
        return weight_bytes + gradient_bytes + optimizer_bytes + state_bytes + ema_bytes + activation_bytes + scratch_bytes +
               workspace_bytes + input_bytes + gemm_copy_bytes;
    }
};

// `rows_per_replica`: the largest shard of the global batch; `on_gpu`: the
// replicas are GPUs (which may keep GEMM input copies; the CPU never does).
// `with_optimizer` false: a replica for inference (ReplicaUse::inference: no
// optimizer state, no gradients, two activation buffers taken in turns).
MemoryEstimate estimate_memory(const config::RunConfig& cfg, int64_t rows_per_replica, bool on_gpu = false,
                               bool with_optimizer = true);

// Before CPU replicas are built (their buffers are zeroed, so memory the
// machine lacks would end the process by the kernel's OOM killer, without a
// word): throws Error when `replicas` replicas of `m` need more than
// `available` bytes (0: unknown, no check). The message gives the sizes and
// what to lower: the largest layer (its place in the config) when weights and
// optimizer state dominate, else training.batch_size; and the replicas.
// `checkpoint_bytes`: a checkpoint file read back into the replicas (its
// contents are held on the host while they load), 0 for none.
void check_host_memory(const config::RunConfig& cfg, const MemoryEstimate& m, int replicas, size_t available,
                       size_t checkpoint_bytes = 0);

// The same for one GPU replica on `device` ("cuda:0"), against the memory
// free on it: what the model's buffers need at least (the estimate has no
// cuBLAS, cuDNN or NCCL workspace), so that a model that cannot fit stops
// with its sizes and largest layer rather than at the allocation that fails.
void check_device_memory(const config::RunConfig& cfg, const MemoryEstimate& m, const std::string& device,
                         size_t free_bytes);

}  // namespace gputrain::train
