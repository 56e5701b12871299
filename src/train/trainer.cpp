#include "train/trainer.hpp"

#include <chrono>
#include <filesystem>

#include "core/error.hpp"
#include "data/loader.hpp"
#include "optim/schedule.hpp"
#include "train/evaluator.hpp"
#include "train/parallel.hpp"
#include "train/tensorboard_writer.hpp"

namespace gputrain::train {

Trainer::Trainer(const config::RunConfig& cfg, std::vector<std::unique_ptr<Replica>>& replicas,
                 const data::DataSplits& data, FitOptions options)
    : cfg_(cfg), replicas_(replicas), data_(data), options_(std::move(options)), progress_(options_.progress, options_.out) {}

void Trainer::run_epoch(Replica& r, int64_t epoch, data::Loader& loader, const optim::Schedule& schedule,
                        double* epoch_sums) {
    const int64_t first_step = state_.global_step;  // global step count at the start of the epoch
    const size_t n = r.model().param_count();
    r.reset_stats();
    int64_t samples = 0;
    for (int64_t step = 0; step < steps_per_epoch_; ++step) {
        auto batch = loader.get(step);
        const int64_t begin = batch->shard_begin[r.rank()], end = batch->shard_begin[r.rank() + 1];
        r.load_shard(batch->inputs.data(), batch->labels.data(), begin, end);
        nn::RunContext ctx{r.backend(), true, cfg_.training.seed, epoch, step, begin};
        r.model().forward_backward(ctx, r.inputs(), r.labels(), static_cast<int>(end - begin),
                                   1.0f / static_cast<float>(batch->size), r.stats());
        // Every replica joins every all-reduce, even with an empty shard.
        r.comm().allreduce_sum(r.model().grad_data(), n);
        const int64_t global_step = first_step + step;
        r.optimizer().step(r.model().param_data(), r.model().grad_data(), schedule.learning_rate(global_step),
                           global_step + 1);
        samples += batch->size;
        if ((step + 1) % report_every_ == 0 || step + 1 == steps_per_epoch_) {
            // Loss and correct counts differ per replica; the sample count is already global.
            double reduced[2];
            r.read_stats(reduced[0], reduced[1]);
            r.comm().allreduce_sum_host(reduced, 2);
            if (r.rank() == 0) {
                epoch_sums[0] = reduced[0];
                epoch_sums[1] = reduced[1];
                epoch_sums[2] = static_cast<double>(samples);
                progress_.update(step + 1, {{"loss", reduced[0] / samples}, {"accuracy", reduced[1] / samples}});
            }
        }
    }
}

FitResult Trainer::fit() {
    FitResult result;
    const int replicas = static_cast<int>(replicas_.size());
    data::Loader loader(data_.train, cfg_.training.batch_size, replicas, cfg_.training.shuffle, cfg_.training.seed);
    steps_per_epoch_ = loader.steps_per_epoch();
    report_every_ = std::max<int64_t>(1, steps_per_epoch_ / 100);

    Checkpointer checkpointer(cfg_, options_.run_dir);
    const bool has_validation = data_.validation.size() > 0;
    const std::string monitor = checkpointer.monitor(has_validation);
    if (!options_.resume_from.empty()) {
        std::string warning;
        state_ = restore(options_.resume_from, replicas_, cfg_, /*with_optimizer=*/true, &warning);
        if (!warning.empty()) std::fprintf(options_.out, "warning: %s\n", warning.c_str());
        std::fprintf(options_.out, "Resuming from %s after epoch %lld (step %lld)\n", options_.resume_from.c_str(),
                     (long long)state_.epochs_done, (long long)state_.global_step);
    }
    MetricsFile metrics(cfg_.logging.metrics_file.empty()
                            ? std::string()
                            : (std::filesystem::path(options_.run_dir) / cfg_.logging.metrics_file).string(),
                        /*append=*/!options_.resume_from.empty());
    TensorBoardWriter tensorboard(cfg_.logging.tensorboard
                                      ? (std::filesystem::path(options_.run_dir) / "tensorboard").string()
                                      : std::string());
    const optim::Schedule schedule(cfg_.optimizer, steps_per_epoch_, cfg_.training.epochs);

    for (int64_t epoch = state_.epochs_done; epoch < cfg_.training.epochs; ++epoch) {
        const auto start = std::chrono::steady_clock::now();
        const double lr = schedule.learning_rate(state_.global_step);
        progress_.begin_epoch(epoch, cfg_.training.epochs, steps_per_epoch_);
        loader.start_epoch(epoch);
        double sums[3] = {0, 0, 1};
        run_on_replicas(replicas_, [&](Replica& r) { run_epoch(r, epoch, loader, schedule, sums); });
        state_.global_step += steps_per_epoch_;
        state_.epochs_done = epoch + 1;
        const double train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

        EpochRecord rec;
        rec.epoch = epoch + 1;
        rec.loss = sums[0] / sums[2];
        rec.accuracy = sums[1] / sums[2];
        rec.learning_rate = lr;
        rec.samples_per_second = static_cast<double>(data_.train.size()) / train_seconds;
        MetricList shown{{"loss", rec.loss}, {"accuracy", rec.accuracy}};
        if (has_validation) {
            const EvalResult v = evaluate(replicas_, data_.validation, cfg_.training.batch_size);
            rec.has_validation = true;
            rec.val_loss = v.loss;
            rec.val_accuracy = v.accuracy;
            shown.push_back({"val_loss", v.loss});
            shown.push_back({"val_accuracy", v.accuracy});
        }
        rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        progress_.end_epoch(shown, rec.seconds);

        const double value = monitor == "accuracy" ? rec.accuracy
                             : monitor == "val_accuracy" ? rec.val_accuracy
                             : monitor == "val_loss" ? rec.val_loss
                                                     : rec.loss;
        const bool is_best = checkpointer.improves(state_, value, monitor);
        if (is_best) {
            state_.has_best = true;
            state_.best_value = value;
        }
        metrics.write(rec);
        tensorboard.write(rec);
        auto written = checkpointer.save_epoch(*replicas_[0], state_, rec, is_best);
        result.checkpoints.insert(result.checkpoints.end(), written.begin(), written.end());
        result.history.push_back(rec);
    }
    result.epochs_done = state_.epochs_done;
    return result;
}

}  // namespace gputrain::train
