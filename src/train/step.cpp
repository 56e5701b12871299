#include "train/step.hpp"

#include "backend/ops/optimizers.hpp"

namespace gputrain::train {

Step::Step(const config::RunConfig& cfg, Replica& replica, LossScaler& scaler, bool sticky)
    : replica_(replica),
      scaler_(scaler),
      seed_(cfg.training.seed),
      fused_(cfg.training.fused_kernels),
      sticky_(sticky),
      cross_(replica.comm()),
      buckets_(replica.model(), cfg.strategy.bucket_mb, replica.comm(), replica.model().grad_data()),
      clip_norm_(static_cast<float>(cfg.training.clip_norm)) {
    if (clip_norm_ > 0) clip_scratch_ = Buffer(replica.backend(), sizeof(float));
}

void Step::run(const StepInput& in) {
    prepare(in);
    Replica& r = replica_;
    r.graphs().run({in.rows, in.global_batch, r.inputs(), r.labels()}, [this] { queue(); });
}

void Step::prepare(const StepInput& in) {
    Replica& r = replica_;
    in_ = in;
    // This update's scalars go to the device before the step that reads them.
    r.optimizer().prepare(in.learning_rate, in.global_step + 1);
    // fp16: the loss scale, a power of two (exact to apply and to undo), from backend memory.
    ctx_.emplace(nn::RunContext{r.backend(), true, seed_, in.epoch, in.step, in.row_offset,
                                r.comm().size() > 1 ? &cross_ : nullptr, fused_,
                                scaler_.enabled() ? scaler_.scale_ptr() : nullptr});
    r.model().prepare_step(*ctx_);  // per-step values (dropout's key), outside any recorded graph
}

void Step::queue() {
    forward_backward();
    reduce_gradients();
    apply_update();
    average_state();
}

void Step::forward_backward() {
    Replica& r = replica_;
    r.prepare_shard(/*augmenting=*/true);  // the shard's inputs, from the rows as stored
    // Buckets of gradients are all-reduced while backward goes on (strategy.bucket_mb).
    r.model().forward_backward(*ctx_, r.inputs(), r.labels(), in_.rows, 1.0f / static_cast<float>(in_.global_batch),
                               r.stats(), buckets_.on_ready());
}

void Step::forward_backward_observed(const nn::Model::LayerObserver& after) {
    Replica& r = replica_;
    // The caller has prepared the shard (bench times it as the input's share).
    r.model().forward_backward_observed(*ctx_, r.inputs(), r.labels(), in_.rows,
                                        1.0f / static_cast<float>(in_.global_batch), r.stats(), after);
}

void Step::reduce_gradients() {
    Replica& r = replica_;
    // Every replica joins every all-reduce, even with an empty shard. Whether
    // the sums are finite: known from the summing (CPU replicas), else one
    // pass over them, on the device.
    r.guard().check(r.model().grad_data(), r.model().param_count(), buckets_.finish());
}

void Step::apply_update() {
    Replica& r = replica_;
    const size_t n = r.model().param_count();
    const int32_t* skip = r.guard().skip_flag(sticky_);
    if (scaler_.enabled()) {
        // Unscaled with this step's scale, then the scale for the next step.
        r.backend().scale_by(r.model().grad_data(), n, scaler_.inverse_ptr());
        scaler_.update(r.guard().words(), sticky_);
        skip = scaler_.skip_flag();
    }
    // The global norm of the summed gradients: the same on every replica.
    if (clip_norm_ > 0)
        run_op(r.backend(), ops::ClipByGlobalNorm{r.model().grad_data(), n, clip_norm_, clip_scratch_.floats()});
    // Identical on every replica after the all-reduce, so all skip alike.
    r.optimizer().apply(r.model().param_data(), r.model().grad_data(), skip);
}

void Step::average_state() { replica_.average_state(); }

}  // namespace gputrain::train
