// train::Step, the one training step: run as `gputrain bench` runs it (its
// parts with Model::forward_backward_observed, and prepare() + queue() as its
// pipelined steps do), it must train to the weights of fit's Trainer bit for
// bit, under fp16 too. On the CPU fp16 trains like fp32 unless the GEMMs
// round to fp16, so the recording backend emulates that: there the loss scale
// keeps the small gradients of a large batch out of fp16's subnormals, and a
// step without it (bench's before Step) trains to other weights.
#include "dist/local_communicator.hpp"
#include "optim/schedule.hpp"
#include "recording_backend.hpp"
#include "train/parallel.hpp"
#include "train/step.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

// Replicas whose GEMMs round their operands to fp16 (or bf16).
std::vector<std::unique_ptr<train::Replica>> rounding_replicas(const config::RunConfig& cfg, int count) {
    std::vector<std::unique_ptr<train::Replica>> out;
    auto comms = dist::make_local_communicators(count);
    const int64_t rows = (cfg.training.batch_size + count - 1) / count;
    for (int r = 0; r < count; ++r) {
        auto backend = std::make_unique<fixture::RecordingBackend>();
        backend->set_bf16_gemm(true, false, cfg.training.precision == config::Precision::fp16);
        out.push_back(std::make_unique<train::Replica>(cfg, std::move(backend), std::move(comms[r]), rows));
    }
    return out;
}

enum class Way { queued, parts_observed, without_loss_scale };

struct Trained {
    std::vector<float> params;
    math::LossScaleState scale;  // replica 0's after the last step
};

// Trains cfg's epochs on `data` (unshuffled, whole batches) step by step as
// bench does: each replica loads its shard of the step's batch itself.
// without_loss_scale: bench's own step before train::Step (forward_backward
// without the loss scale, the finite check, the update), for comparison.
Trained train_like_bench(const config::RunConfig& cfg, const data::Dataset& data, int count, Way way) {
    auto replicas = rounding_replicas(cfg, count);
    const int64_t batch = cfg.training.batch_size, per = data.sample_elements();
    const int64_t steps_per_epoch = data.size() / batch;
    const optim::Schedule schedule(cfg.optimizer, steps_per_epoch, cfg.training.epochs);
    const std::vector<int64_t> shards = data::shard_offsets(batch, count);
    Trained out;
    train::run_on_replicas(replicas, [&](train::Replica& r) {
        train::LossScaler scaler(r.backend(), cfg.training.precision == config::Precision::fp16);
        train::Step step(cfg, r, scaler, /*sticky=*/false);
        const int64_t begin = shards[r.rank()], end = shards[r.rank() + 1];
        const int rows = static_cast<int>(end - begin);
        for (int64_t epoch = 0; epoch < cfg.training.epochs; ++epoch)
            for (int64_t s = 0; s < steps_per_epoch; ++s) {
                const int64_t global_step = epoch * steps_per_epoch + s;
                const float* x = data.inputs.data() + s * batch * per;
                const int32_t* y = data.labels.data() + s * batch;
                r.load_shard(x, y, begin, end);
                const double lr = schedule.learning_rate(global_step, epoch, s);
                step.prepare({epoch, s, global_step, lr, begin, rows, batch});
                switch (way) {
                case Way::queued:
                    step.queue();
                    break;
                case Way::parts_observed:
                    step.forward_backward_observed([](size_t, nn::Model::Phase) {});
                    step.reduce_gradients();
                    step.apply_update();
                    step.average_state();
                    break;
                case Way::without_loss_scale: {
                    nn::Model& m = r.model();
                    train::CrossReplicaComm cross(r.comm());
                    train::GradientBuckets buckets(m, cfg.strategy.bucket_mb, r.comm(), m.grad_data());
                    nn::RunContext ctx{r.backend(), true, cfg.training.seed, epoch, s, begin,
                                       count > 1 ? &cross : nullptr, cfg.training.fused_kernels};
                    m.forward_backward(ctx, r.inputs(), r.labels(), rows, 1.0f / static_cast<float>(batch), r.stats(),
                                       buckets.on_ready());
                    r.guard().check(m.grad_data(), m.param_count(), buckets.finish());
                    r.optimizer().apply(m.param_data(), m.grad_data(), r.guard().skip_flag(false));
                    r.average_state();
                    break;
                }
                }
            }
        if (r.rank() == 0) {
            out.params = fixture::params_of(r);
            if (scaler.enabled()) out.scale = scaler.read();
        }
    });
    return out;
}

// A batch large enough that the loss gradient (1/batch per row) falls below
// fp16's smallest normal number, 6e-5, for most rows.
config::RunConfig fp16_job(int64_t epochs) {
    auto cfg = fixture::small_job(epochs, 256);
    cfg.training.shuffle = false;
    cfg.training.precision = config::Precision::fp16;
    cfg.training.cuda_graphs = false;
    return cfg;
}

}  // namespace

TEST_CASE("Step as bench runs it trains to fit's weights bit for bit, fp16's loss scale included") {
    const int replicas = GENERATE(1, 2);
    const config::Precision precision = GENERATE(config::Precision::fp16, config::Precision::bf16);
    INFO(replicas << " replica(s), " << config::name_of(precision));
    auto cfg = fp16_job(2);
    cfg.training.precision = precision;
    data::DataSplits data;
    data.train = fixture::blobs(256 * 3, 7);  // 3 whole steps an epoch

    fixture::TempDir dir;
    auto fit_replicas = rounding_replicas(cfg, replicas);
    fixture::fit(cfg, fit_replicas, data, dir.path.string());
    const std::vector<float> fitted = fixture::params_of(*fit_replicas[0]);

    const Trained queued = train_like_bench(cfg, data.train, replicas, Way::queued);
    const Trained parts = train_like_bench(cfg, data.train, replicas, Way::parts_observed);
    REQUIRE(queued.params == fitted);
    REQUIRE(parts.params == fitted);
    if (precision == config::Precision::fp16) {
        // The scaler ran every step: 6 good steps at the first scale.
        CHECK(queued.scale.scale == 65536.0f);
        CHECK(queued.scale.good_steps == 6);
        CHECK(parts.scale.good_steps == 6);
        // And the scale mattered: without it the fp16 GEMMs flush the small gradients.
        const Trained unscaled = train_like_bench(cfg, data.train, replicas, Way::without_loss_scale);
        REQUIRE(unscaled.params != fitted);
    } else {
        // bf16 has fp32's range and no loss scale: the old step was already fit's.
        REQUIRE(train_like_bench(cfg, data.train, replicas, Way::without_loss_scale).params == fitted);
    }
}
