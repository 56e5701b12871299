// Step: one replica's training step, written once. Trainer runs it for fit,
// and `gputrain bench` times it, so that bench measures the step fit takes,
// fp16's loss scale included.
//
// The work a step queues on the backend (queue()): the shard gathered when the
// training set is resident; forward and backward (under
// training.accumulate_steps K: K micro-batches of the shard, their gradients
// summed locally, and one all-reduce of the sum; the loss gradient times
// 1/global batch and, under fp16, the loss scale), with the gradient
// all-reduce started bucket by bucket as backward goes (strategy.bucket_mb);
// the finite check (StepGuard); under fp16 the gradients unscaled and the
// scale updated (LossScaler); the optimizer's update, skipped on the guard's
// or the scaler's flag; batch norm's moving statistics averaged over the
// replicas. Every replica runs the same calls in the same order, so the
// collectives match.
#pragma once

#include <cstdint>
#include <optional>

#include "backend/buffer.hpp"
#include "config/run_config.hpp"
#include "nn/model.hpp"
#include "train/cross_replica_comm.hpp"
#include "train/gradient_buckets.hpp"
#include "train/loss_scaler.hpp"
#include "train/replica.hpp"

namespace gputrain::train {

// What changes from step to step.
struct StepInput {
    int64_t epoch = 0;
    int64_t step = 0;         // within the epoch (dropout's key)
    int64_t global_step = 0;  // the optimizer's update is number global_step + 1
    double learning_rate = 0;
    int64_t row_offset = 0;   // this shard's first row within the global batch
    int rows = 0;             // this shard's rows (0: an empty shard, which still joins every collective)
    int64_t global_batch = 0; // the loss is a sum over the shard times 1/global_batch
    double momentum = -1;     // one_cycle's cycled momentum (Schedule::momentum); negative: the optimizer's own
};

class Step {
public:
    // `scaler` is the replica's fp16 loss scale (disabled: none), and outlives
    // the Step. `sticky`: training.on_nan: stop, under which no update lands
    // after the first bad step since the guard's reset (StepGuard::skip_flag).
    Step(const config::RunConfig& cfg, Replica& replica, LossScaler& scaler, bool sticky);
    Step(const Step&) = delete;  // the buckets' callback refers to this object
    Step& operator=(const Step&) = delete;

    // One step on the shard already in the replica's buffers
    // (Replica::load_training_shard): prepare(), then queue() through the
    // replica's StepGraphs (recorded and replayed when they are enabled).
    void run(const StepInput& in);

    // Host work before the queued work, outside any recorded graph: the
    // optimizer's scalars (Optimizer::prepare) and the layers' per-step
    // values (dropout's key, Model::prepare_step).
    void prepare(const StepInput& in);
    // The step's work, queued on the backend after prepare(): the same calls
    // from step to step for one shape. Each part below in turn.
    void queue();

    // queue()'s parts, in its order, for a caller that times each
    // (`gputrain bench`, which synchronizes between them).
    // The shard gathered (resident set), forward and backward; gradient
    // buckets all-reduced as backward passes them.
    void forward_backward();
    // The same with Model::forward_backward_observed, which calls `after`
    // after each layer: the same arithmetic, but it tells of no gradients
    // ready, so the whole all-reduce waits for reduce_gradients().
    void forward_backward_observed(const nn::Model::LayerObserver& after);
    // The all-reduce finished; whether the sums are finite tallied (StepGuard).
    void reduce_gradients();
    // fp16: the gradients unscaled and the scale updated; then the optimizer's
    // update, skipped on the guard's (or the scaler's) flag.
    void apply_update();
    // Batch norm's moving statistics averaged over the replicas (nothing without state or with one replica).
    void average_state();

    LossScaler& scaler() { return scaler_; }

private:
    Replica& replica_;
    LossScaler& scaler_;
    const uint64_t seed_;
    const bool fused_;
    const bool sticky_;
    CrossReplicaComm cross_;  // for layers that reduce across replicas (sync batch norm)
    GradientBuckets buckets_;
    std::optional<nn::RunContext> ctx_;  // prepare()'s, read by the parts
    StepInput in_;
    const float clip_norm_;  // training.clip_norm (0: off)
    // training.accumulate_steps: micro-batches per step, and the sum of the
    // earlier micro-batches' gradients (param_count floats when > 1).
    const int64_t accumulate_;
    Buffer grad_acc_;
    // training.ema: its decay, first epoch, and this step's decay on the device.
    const float ema_decay_value_;
    const int64_t ema_start_;
    Buffer ema_decay_;
    Buffer clip_scratch_;    // the gradients' norm before clipping (one float)
};

}  // namespace gputrain::train
