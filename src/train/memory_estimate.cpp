#include "train/memory_estimate.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "backend/cpu/sizing_backend.hpp"
#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "nn/layer_args.hpp"
#include "nn/model.hpp"
#include "optim/optimizer.hpp"

namespace gputrain::train {

MemoryEstimate estimate_memory(const config::RunConfig& cfg, int64_t rows_per_replica, bool on_gpu,
                               bool with_optimizer) {
    MemoryEstimate m;
    m.rows_per_replica = std::max<int64_t>(1, rows_per_replica);
    // The same constructors a replica runs, so the numbers cannot drift from
    // the real allocations; on a backend that allocates none of them.
    const config::Precision precision = cfg.training.precision;
    SizingBackend backend(on_gpu && cfg.training.cast_gemm_inputs &&
                          (precision == config::Precision::bf16 || precision == config::Precision::fp16));
    const nn::Model model(cfg.model, cfg.loss, backend, m.rows_per_replica, cfg.training.seed,
                          with_optimizer ? nn::ModelUse::training : nn::ModelUse::inference);
    const auto optimizer = optim::make_optimizer(cfg.optimizer, backend, model.param_count());
    m.params = model.param_count();
    const auto& offsets = model.layer_param_offsets();
    for (size_t i = 0; i + 1 < offsets.size(); ++i)
        if (offsets[i + 1] - offsets[i] > m.largest_layer_params) {
            m.largest_layer = static_cast<int>(i);
            m.largest_layer_params = offsets[i + 1] - offsets[i];
        }
    m.optimizer_slots = with_optimizer ? optimizer->state().size() : 0;
    m.weight_bytes = m.params * sizeof(float);
    m.gradient_bytes = with_optimizer ? m.weight_bytes : 0;
    m.optimizer_bytes = m.optimizer_slots * m.params * sizeof(float);
    m.state_bytes = model.state_count() * sizeof(float);
    if (with_optimizer && cfg.training.ema.enabled) m.ema_bytes = (cfg.training.ema.evaluate ? 2 : 1) * m.weight_bytes;
    m.activation_bytes = model.activation_floats() * sizeof(float);
    m.scratch_bytes = model.scratch_floats() * sizeof(float);
    m.workspace_bytes = model.workspace_bytes();
    m.gemm_copy_bytes = backend.reserved_gemm_scratch() + model.gemm_copy_bytes();  // gemm()'s scratch, the layers' copies
    // Replica: the shard's inputs and labels (a label per position of a sequence model), and the two running sums.
    m.input_bytes = static_cast<size_t>(m.rows_per_replica) *
                        (static_cast<size_t>(shape_elements(model.input_shape())) * sizeof(float) +
                         static_cast<size_t>(model.positions()) * sizeof(int32_t)) +
                    2 * sizeof(float);
    return m;
}

namespace {

// "weights, gradients and adam state 23.7 GiB, activations and scratch at 32 samples 976.8 MiB"
std::string breakdown(const config::RunConfig& cfg, const MemoryEstimate& m) {
    const size_t per_param = m.weight_bytes + m.gradient_bytes + m.optimizer_bytes;
    const std::string optimizer = config::name_of(cfg.optimizer.type);
    const std::string what = m.optimizer_slots   ? "weights, gradients and " + optimizer + " state "
                             : m.gradient_bytes ? "weights and gradients "
                                                : "weights ";
    return what +
           human_bytes(per_param) +
           ", activations and scratch at " + std::to_string(m.rows_per_replica) +
           (m.rows_per_replica == 1 ? " sample " : " samples ") + human_bytes(m.total_bytes() - per_param);
}

// The largest layer (and where the config has it) when the weights and their
// state are most of it, else training.batch_size.
std::string what_to_lower(const config::RunConfig& cfg, const MemoryEstimate& m) {
    const size_t per_param = m.weight_bytes + m.gradient_bytes + m.optimizer_bytes;
    if (per_param < m.total_bytes() - per_param || m.largest_layer < 0) return "lower training.batch_size";
    const auto& spec = cfg.model.layers[static_cast<size_t>(m.largest_layer)];
    std::string place = nn::LayerArgs(spec, m.largest_layer).place();  // "FILE:LINE:COL: " or ""
    if (place.size() >= 2) place = ", " + place.substr(0, place.size() - 2);
    const std::string path = spec.path.empty() ? "model.layers[" + std::to_string(m.largest_layer) + "]" : spec.path;
    return "the largest layer is " + (spec.scoped ? "'" + spec.name + "' (" + path : path + " (") + spec.type + ", " +
           std::to_string(m.largest_layer_params) + " parameters" + place + "): make it smaller";
}

}  // namespace

void check_host_memory(const config::RunConfig& cfg, const MemoryEstimate& m, int replicas, size_t available,
                       size_t checkpoint_bytes) {
    const size_t each = m.total_bytes();
    const size_t need = each * static_cast<size_t>(std::max(1, replicas)) + checkpoint_bytes;
    if (available == 0 || need <= available) return;
    std::string text = "not enough memory on the CPU: " +
                       (replicas > 1 ? std::to_string(replicas) + " replicas need " + human_bytes(need) + " (each " +
                                           human_bytes(each) + ": "
                                     : "the model needs " + human_bytes(need) + " (") +
                       breakdown(cfg, m) + ")" +
                       (checkpoint_bytes ? ", with " + human_bytes(checkpoint_bytes) + " to read the checkpoint" : "") +
                       ", but " + human_bytes(available) +
                       " is available (MemAvailable + SwapFree, within any cgroup or ulimit -v limit); " + what_to_lower(cfg, m);
    if (replicas > 1) text += ", or use fewer replicas (--replicas)";
    throw Error(text);
}

void check_device_memory(const config::RunConfig& cfg, const MemoryEstimate& m, const std::string& device,
                         size_t free_bytes) {
    if (free_bytes == 0 || m.total_bytes() <= free_bytes) return;
    throw Error(device + ": not enough GPU memory: the model needs at least " + human_bytes(m.total_bytes()) +
                " (" + breakdown(cfg, m) + "; the GPU libraries' workspaces come on top), but " +
                human_bytes(free_bytes) + " is free; " + what_to_lower(cfg, m));
}

}  // namespace gputrain::train
