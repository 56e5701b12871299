#include "train/step.hpp"

#include "backend/ops/elementwise.hpp"
#include "backend/ops/optimizers.hpp"

#include <algorithm>

namespace gputrain::train {

Step::Step(const config::RunConfig& cfg, Replica& replica, LossScaler& scaler, bool sticky)
    : replica_(replica),
      scaler_(scaler),
      seed_(cfg.training.seed),
      fused_(cfg.training.fused_kernels),
      sticky_(sticky),
      cross_(replica.comm()),
      buckets_(replica.model(), cfg.strategy.bucket_mb, replica.comm(), replica.model().grad_data()),
      clip_norm_(static_cast<float>(cfg.training.clip_norm)),
      accumulate_(std::max<int64_t>(1, cfg.training.accumulate_steps)),
      ema_decay_value_(static_cast<float>(cfg.training.ema.decay)),
      ema_start_(cfg.training.ema.start_epoch) {
    if (clip_norm_ > 0) clip_scratch_ = Buffer(replica.backend(), sizeof(float));
    if (accumulate_ > 1)
        grad_acc_ = Buffer(replica.backend(), std::max<size_t>(1, replica.model().param_count()) * sizeof(float));
    if (replica.ema()) ema_decay_ = Buffer(replica.backend(), sizeof(float));
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
    r.optimizer().set_momentum(in.momentum);
    r.optimizer().prepare(in.learning_rate, in.global_step + 1);
    if (r.ema()) {
        // Before training.ema.start_epoch, and at the run's first step, the
        // average copies the weights (decay 0); then it decays.
        const float decay = in.epoch >= ema_start_ && in.global_step > 0 ? ema_decay_value_ : 0.0f;
        r.backend().upload(ema_decay_.floats(), &decay, sizeof decay);
    }
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
    const float grad_scale = 1.0f / static_cast<float>(in_.global_batch);
    if (accumulate_ == 1) {
        // Buckets of gradients are all-reduced while backward goes on (strategy.bucket_mb).
        r.model().forward_backward(*ctx_, r.inputs(), r.labels(), in_.rows, grad_scale, r.stats(), buckets_.on_ready());
        return;
    }
    // training.accumulate_steps K: the shard in K micro-batches of the model's
    // rows (the last ones shorter, or empty: every replica runs K, so their
    // collectives, such as sync batch norm's, match). Each micro-batch's row
    // offset is its place in the global batch (dropout's masks are those of
    // one batch). Gradients: the first K - 1 summed into grad_acc_, the last
    // one's added to that sum, and reduce_gradients() all-reduces the total
    // once; no bucket starts during backward.
    nn::Model& m = r.model();
    const size_t n = m.param_count();
    const int64_t chunk = m.max_rows();
    float* acc = grad_acc_.floats();
    for (int64_t c = 0; c < accumulate_; ++c) {
        const int64_t first = std::min<int64_t>(c * chunk, in_.rows);
        const int rows = static_cast<int>(std::min<int64_t>(chunk, in_.rows - first));
        nn::RunContext ctx = *ctx_;
        ctx.row_offset = in_.row_offset + first;
        m.forward_backward(ctx, r.inputs() + first * r.sample_elements(), r.labels() + first * r.label_width(), rows,
                           grad_scale, r.stats());
        if (c == 0) r.backend().copy(acc, m.grad_data(), n * sizeof(float));
        else if (c + 1 < accumulate_) run_op(r.backend(), ops::Accumulate{acc, m.grad_data(), n});
        else run_op(r.backend(), ops::Accumulate{m.grad_data(), acc, n});
    }
}

void Step::forward_backward_observed(const nn::Model::LayerObserver& after) {
    Replica& r = replica_;
    // The caller has prepared the shard (bench times it as the input's share).
    // Under training.accumulate_steps, the first micro-batch: what the model holds at once.
    const int rows = static_cast<int>(std::min<int64_t>(in_.rows, r.model().max_rows()));
    r.model().forward_backward_observed(*ctx_, r.inputs(), r.labels(), rows,
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
    // CPU replicas of one process: each clips and updates its slice (the
    // optimizer's shard) and hands it to the others (SharedUpdate).
    SharedUpdate* shared = r.shared_update();
    // The global norm of the summed gradients: the same on every replica.
    if (clip_norm_ > 0 && shared)
        *clip_scratch_.floats() = shared->clip(r.shared_index(), r.model().grad_data(), clip_norm_);
    else if (clip_norm_ > 0)
        run_op(r.backend(), ops::ClipByGlobalNorm{r.model().grad_data(), n, clip_norm_, clip_scratch_.floats()});
    // Identical on every replica after the all-reduce, so all skip alike.
    r.optimizer().apply(r.model().param_data(), r.model().grad_data(), skip);
    const auto [begin, end] = shared ? shared->slice(r.shared_index()) : std::pair<size_t, size_t>{0, n};
    // training.ema: the average follows the updated weights (a skipped step
    // moves neither); its decay for this step was written by prepare().
    if (float* ema = r.ema(); ema && end > begin)
        run_op(r.backend(),
               ops::EmaUpdate{ema + begin, r.model().param_data() + begin, end - begin, ema_decay_.floats(), skip});
    if (shared) shared->publish(r.shared_index());
}

void Step::average_state() { replica_.average_state(); }

}  // namespace gputrain::train
