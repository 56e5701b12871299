// gputrain bench CONFIG: like `caffe time`. Builds the replicas exactly as fit
// does, runs warm-up steps and then timed training steps (fit's own step,
// train::Step, fp16's loss scale included) on the config's own training data,
// and prints the median time of each layer's forward and backward and the
// step split into its phases; then as many steps queued as fit queues them
// (no synchronization between parts), whose time gives samples/s; and for
// each dense layer's GEMMs the rate the backend reaches on that shape alone
// next to the rate the layer reached inside the step.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "backend/buffer.hpp"
#include "checkpoint/json.hpp"
#include "cli/bench_gemm.hpp"
#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/run_setup.hpp"
#include "config/gemm_epilogues_use.hpp"
#include "core/error.hpp"
#include "data/dataset.hpp"
#include "data/loader.hpp"
#include "device/devices.hpp"
#include "optim/schedule.hpp"
#include "train/loss_scaler.hpp"
#include "train/parallel.hpp"
#include "train/step.hpp"
#include "train/strategy.hpp"

namespace gputrain::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
    CommonOptions common;
    int64_t steps = 20;
    int64_t warmup = 3;
    bool json = false;
};

// Host batches cycled through by the steps: the first batches of the training
// set in order (at most 16 distinct ones), each cut into the replicas' shards.
struct HostBatches {
    // With data.augment, the batches as stored (bytes or floats) with their
    // sample ids, which each step prepares (converts and augments) as fit
    // does: the input's share of the step includes that work.
    std::vector<data::Batch> stored;
    std::vector<std::vector<float>> inputs;
    std::vector<std::vector<int32_t>> labels;
    std::vector<int64_t> shard_begin;
    int64_t batch = 0;
    int label_width = 1;  // labels per sample (Dataset::labels)
};

HostBatches make_batches(const data::Dataset& train, int64_t batch, int replicas, int64_t steps) {
    HostBatches b;
    b.batch = batch;
    b.label_width = train.label_width;
    b.shard_begin = data::shard_offsets(batch, replicas);
    const int64_t distinct = std::min<int64_t>({steps, 16, (train.size() + batch - 1) / batch});
    const int64_t per = train.sample_elements();
    for (int64_t s = 0; s < distinct; ++s) {
        std::vector<float> x(static_cast<size_t>(batch * per));
        const int width = train.label_width;
        std::vector<int32_t> y(static_cast<size_t>(batch * width));
        for (int64_t r = 0; r < batch; ++r) {
            const int64_t src = (s * batch + r) % train.size();
            const std::vector<float> row = data::model_inputs(train, src, src + 1);  // as the model reads it
            std::copy_n(row.begin(), per, x.begin() + r * per);
            const std::vector<int32_t> labels = data::sample_labels(train, src, src + 1);
            std::copy_n(labels.begin(), width, y.begin() + r * width);
        }
        b.inputs.push_back(std::move(x));
        b.labels.push_back(std::move(y));
    }
    return b;
}

// The same batches as stored, for a config that augments.
void add_stored_batches(HostBatches& b, const data::Dataset& train) {
    const int64_t per = train.sample_elements();
    for (size_t s = 0; s < b.inputs.size(); ++s) {
        data::Batch batch;
        batch.step = static_cast<int64_t>(s);
        batch.size = b.batch;
        batch.type = train.type;
        batch.row_bytes = train.row_bytes();
        batch.shard_begin = b.shard_begin;
        batch.labels = b.labels[s];
        batch.label_width = b.label_width;
        for (int64_t r = 0; r < b.batch; ++r) {
            const int64_t src = (static_cast<int64_t>(s) * b.batch + r) % train.size();
            batch.ids.push_back(static_cast<int32_t>(src));
            std::vector<char> stored(train.row_bytes());
            train.read_rows(src, 1, stored.data());
            const char* row = stored.data();
            if (train.type != data::SampleType::f32)
                batch.stored.insert(batch.stored.end(), row, row + train.row_bytes());
            else
                batch.inputs.insert(batch.inputs.end(), reinterpret_cast<const float*>(row),
                                    reinterpret_cast<const float*>(row) + per);
        }
        b.stored.push_back(std::move(batch));
    }
}

// Seconds of each timed step (rows: steps), recorded by replica 0.
struct Timings {
    std::vector<std::vector<double>> forward, backward;  // [layer][step]
    std::vector<double> loss, input, forward_backward, allreduce, optimizer, total;
    double loss_sum = 0;  // of the last step, all replicas
    double pipelined_step = 0;  // seconds per step of the steps queued as fit queues them (replica 0)
};

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
}

double ms(double seconds) { return seconds * 1e3; }

// `steps` more steps queued as fit queues them: fit's step (train::Step),
// with no synchronization between layers or parts, the all-reduce started
// while backward runs, the finite check and the update on the device; on a GPU
// each shard comes from device memory, as with data.resident. Returns the
// seconds per step.
double run_pipelined_steps(train::Replica& r, train::Step& train_step, const HostBatches& batches, int64_t steps,
                           const optim::Schedule& schedule, int64_t first_step) {
    Backend& be = r.backend();
    const int64_t begin = batches.shard_begin[r.rank()], end = batches.shard_begin[r.rank() + 1];
    const int rows = static_cast<int>(end - begin);
    const int64_t per = static_cast<int64_t>(batches.inputs[0].size()) / batches.batch;
    const size_t input_bytes = static_cast<size_t>(rows * per) * sizeof(float);
    const size_t label_bytes = static_cast<size_t>(rows) * batches.label_width * sizeof(int32_t);
    std::vector<Buffer> inputs, labels;  // the batches in device memory, freed on any exit
    const bool on_device = be.has_device_memory() && rows > 0 && batches.stored.empty();
    if (on_device) {
        for (size_t b = 0; b < batches.inputs.size(); ++b) {
            inputs.emplace_back(be, input_bytes);
            labels.emplace_back(be, label_bytes);
            be.copy_to_device(inputs.back().get(), batches.inputs[b].data() + begin * per, input_bytes);
            be.copy_to_device(labels.back().get(), batches.labels[b].data() + begin * batches.label_width,
                              label_bytes);
        }
    }
    r.guard().reset();
    const size_t distinct = batches.inputs.size();
    r.comm().barrier();
    be.synchronize();
    const auto start = Clock::now();
    for (int64_t i = 0; i < steps; ++i) {
        const int64_t step = first_step + i;
        const size_t b = static_cast<size_t>(step) % distinct;
        if (!batches.stored.empty()) {
            r.load_shard(batches.stored[b], begin, end, /*augmenting=*/true);  // prepared in the step
        } else if (on_device) {
            be.copy(r.inputs(), inputs[b].get(), input_bytes);
            be.copy(r.labels(), labels[b].get(), label_bytes);
        } else {
            r.load_shard(batches.inputs[b].data(), batches.labels[b].data(), begin, end);
        }
        train_step.prepare({0, static_cast<int64_t>(b), step, schedule.learning_rate(step), begin, rows, batches.batch,
                            schedule.momentum(step)});
        train_step.queue();
    }
    be.synchronize();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return steps > 0 ? seconds / static_cast<double>(steps) : 0.0;
}

void run_steps(train::Replica& r, const config::RunConfig& cfg, const HostBatches& batches, const BenchArgs& args,
               Timings& t, std::mutex& mutex) {
    Backend& be = r.backend();
    nn::Model& model = r.model();
    const bool record = r.rank() == 0;
    // fit's step, fp16's loss scale included (one scaler per replica, as the
    // trainer keeps). A step with NaN/Inf gradients is skipped alone
    // (on_nan: skip_step's flag whatever the config says): bench never stops
    // on one, and the flag's kind changes no work the step queues.
    train::LossScaler scaler(be, cfg.training.precision == config::Precision::fp16);
    train::Step train_step(cfg, r, scaler, /*sticky=*/false);
    const int64_t steps_per_epoch = static_cast<int64_t>(batches.inputs.size());
    const optim::Schedule schedule(cfg.optimizer, steps_per_epoch, cfg.training.epochs);
    const int64_t begin = batches.shard_begin[r.rank()], end = batches.shard_begin[r.rank() + 1];
    const int rows = static_cast<int>(end - begin);

    Clock::time_point mark;
    size_t layer_count = model.layer_count();
    std::vector<double> fwd(layer_count), bwd(layer_count);
    double loss_s = 0;
    auto lap = [&] {
        be.synchronize();
        const auto now = Clock::now();
        const double s = std::chrono::duration<double>(now - mark).count();
        mark = now;
        return s;
    };
    const nn::Model::LayerObserver observe = [&](size_t layer, nn::Model::Phase phase) {
        const double s = lap();
        if (phase == nn::Model::Phase::forward) fwd[layer] = s;
        else if (phase == nn::Model::Phase::backward) bwd[layer] = s;
        else loss_s = s;
    };

    // fit's step part by part (Step's parts, in queue()'s order), synchronized
    // between them and between layers to time each. Its forward and backward
    // are Model::forward_backward_observed: the same arithmetic as fit's, but
    // with no gradients reported ready during backward, so the all-reduce
    // (strategy.bucket_mb's buckets) all runs after it, in the all-reduce's time.
    for (int64_t step = 0; step < args.warmup + args.steps; ++step) {
        const size_t b = static_cast<size_t>(step % steps_per_epoch);
        if (step + 1 == args.warmup + args.steps) r.reset_stats();  // the last step's loss
        be.synchronize();
        const auto start = Clock::now();
        mark = start;
        if (!batches.stored.empty()) {
            r.load_shard(batches.stored[b], begin, end, /*augmenting=*/true);
        } else {
            r.load_shard(batches.inputs[b].data(), batches.labels[b].data(), begin, end);
        }
        r.prepare_shard(/*augmenting=*/true);  // bytes to floats, data.augment: nothing for float batches
        const double input_s = lap();
        train_step.prepare({0, step % steps_per_epoch, step, schedule.learning_rate(step), begin, rows, batches.batch,
                            schedule.momentum(step)});
        const double prepare_s = lap();  // the optimizer's scalars: counted with the optimizer
        const auto fb_start = mark;
        train_step.forward_backward_observed(observe);
        lap();
        const double fb_s = std::chrono::duration<double>(mark - fb_start).count();
        train_step.reduce_gradients();  // the all-reduce, then the finite check
        double allreduce_s = lap();
        train_step.apply_update();  // fp16: unscaled, the scale updated; the update
        const double optimizer_s = prepare_s + lap();
        train_step.average_state();  // batch norm's statistics: an all-reduce too
        allreduce_s += lap();
        const double total_s = std::chrono::duration<double>(mark - start).count();
        if (!record || step < args.warmup) continue;
        for (size_t i = 0; i < layer_count; ++i) {
            t.forward[i].push_back(fwd[i]);
            t.backward[i].push_back(bwd[i]);
        }
        t.loss.push_back(loss_s);
        t.input.push_back(input_s);
        t.forward_backward.push_back(fb_s);
        t.allreduce.push_back(allreduce_s);
        t.optimizer.push_back(optimizer_s);
        t.total.push_back(total_s);
    }
    double loss_sum = 0, correct = 0;
    r.read_stats(loss_sum, correct);
    const double pipelined = run_pipelined_steps(r, train_step, batches, args.steps, schedule, args.warmup);
    std::lock_guard<std::mutex> lock(mutex);
    t.loss_sum += loss_sum;
    if (record) t.pipelined_step = pipelined;
}

struct GemmRow {
    GemmShape shape;
    double bare_gflops;
};

// Per dense layer and pass: the FLOPs of its GEMMs and the time they take bare.
struct LayerGemm {
    double forward_flops = 0, backward_flops = 0, forward_bare_s = 0, backward_bare_s = 0;
};

std::string shape_json(const Shape& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

int run_bench(BenchArgs& args) {
    config::RunConfig cfg = load_config(args.common);
    apply_log_level(cfg, /*quiet=*/true);
    const device::Discovery found = device::discover();
    const train::Strategy strategy(cfg, found, {args.common.device, args.common.replicas, nullptr});
    log_cpu_notes(cfg, strategy.on_gpu(), spdlog::level::warn);
    const data::DataSplits data = data::load_splits(cfg.data, cfg.model.input_shape, data::Need::train);
    if (data.train.size() == 0) throw ConfigError("data: the training set is empty (check data.limit)");

    const int64_t batch = cfg.training.step_batch();  // one optimizer step's samples (accumulate_steps included)
    auto replicas = strategy.make_replicas(cfg, batch);
    check_classes(data.train, replicas[0]->model().classes(), cfg, replicas[0]->model().positions());
    HostBatches batches = make_batches(data.train, batch, strategy.replicas(), args.warmup + args.steps);
    // The label buffers hold label_width values a sample (a text's positions, a regression's targets).
    for (auto& r : replicas) r->set_target_format(data.train.label_width, data.train.real_targets);
    if (!cfg.data.augment.empty()) {
        add_stored_batches(batches, data.train);
        for (auto& r : replicas) r->set_input_format(data.train);
    }

    const nn::Model& model = replicas[0]->model();
    const size_t layers = model.layer_count();
    Timings t;
    t.forward.resize(layers);
    t.backward.resize(layers);
    std::mutex mutex;
    train::run_on_replicas(replicas, [&](train::Replica& r) { run_steps(r, cfg, batches, args, t, mutex); });

    // Bare GEMMs on replica 0's backend, alone (the other replicas idle).
    const int rows0 = static_cast<int>(batches.shard_begin[1] - batches.shard_begin[0]);
    const std::vector<GemmShape> shapes = dense_gemms(model, rows0);
    replicas[0]->backend().bind_thread();
    Backend& backend0 = replicas[0]->backend();
    // Bare: the library's GEMM alone; under the 16-bit copies, on operands
    // rounded beforehand, so that the step is held to cuBLAS's own rate.
    const std::vector<double> rates = bare_gemm_rates(backend0, shapes, 0.3);
    // And with the casts a GEMM makes when nothing keeps copies (each operand
    // rounded at every call), which is what the copies save on.
    std::vector<double> cast_rates;
    if (backend0.gemm_copy_bytes() > 0 && !shapes.empty())
        cast_rates = bare_gemm_rates(backend0, shapes, 0.3, BareGemm::with_casts);
    // bf16/fp16 on a GPU: the bare rates the other way of feeding the tensor
    // cores reaches too (training.cast_gemm_inputs), to tell which pays.
    const bool half =
        cfg.training.precision == config::Precision::bf16 || cfg.training.precision == config::Precision::fp16;
    const bool cast = cfg.training.cast_gemm_inputs;
    std::vector<double> other_rates;
    if (half && backend0.has_device_memory() && !shapes.empty()) {
        backend0.set_gemm_input_cast(!cast);
        other_rates = bare_gemm_rates(backend0, shapes, 0.3);
        backend0.set_gemm_input_cast(cast);
    }
    const std::string other_mode = cast ? "rounded in the GEMM (cast_gemm_inputs: false)"
                                        : "on 16-bit copies (cast_gemm_inputs: true; the casts not timed)";
    std::vector<LayerGemm> per_layer(layers);
    double gemm_flops = 0, bare_s = 0, other_bare_s = 0, cast_bare_s = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
        const GemmShape& s = shapes[i];
        LayerGemm& l = per_layer[s.layer];
        const double seconds = s.flops() / (rates[i] * 1e9);
        (s.pass == "forward" ? l.forward_flops : l.backward_flops) += s.flops();
        (s.pass == "forward" ? l.forward_bare_s : l.backward_bare_s) += seconds;
        gemm_flops += s.flops();
        bare_s += seconds;
        if (!other_rates.empty()) other_bare_s += s.flops() / (other_rates[i] * 1e9);
        if (!cast_rates.empty()) cast_bare_s += s.flops() / (cast_rates[i] * 1e9);
    }

    const Backend::EpiloguePlans epilogues = backend0.gemm_epilogue_plans();
    const double step_s = median(t.total);
    // The training step's rate: steps queued as fit queues them (step_s adds
    // the synchronizations that time each part).
    const double pipelined_s = t.pipelined_step > 0 ? t.pipelined_step : step_s;
    const double samples_per_s = static_cast<double>(batch) / pipelined_s;
    const double final_loss = t.loss_sum / static_cast<double>(batch);
    const std::string where = strategy.on_gpu() ? "gpu" : "cpu";

    // The gradient all-reduce's size: the trainable weights (a frozen layer's
    // tensors, trainable: false, stay out of it; so does the state).
    const size_t reduced_floats = model.param_count();
    const size_t frozen_floats = model.state_count() - model.averaged_state_count();
    if (args.json) {
        std::printf("{\n  \"config\": %s,\n  \"device\": \"%s\",\n  \"replicas\": %d,\n  \"global_batch\": %lld,\n",
                    checkpoint::json::quote(args.common.config_path).c_str(), where.c_str(), strategy.replicas(),
                    (long long)batch);
        std::printf("  \"allreduce_floats\": %zu,\n  \"frozen_floats\": %zu,\n", reduced_floats, frozen_floats);
        std::printf("  \"warmup_steps\": %lld,\n  \"timed_steps\": %lld,\n  \"layers\": [\n", (long long)args.warmup,
                    (long long)args.steps);
        for (size_t i = 0; i < layers; ++i) {
            const LayerGemm& g = per_layer[i];
            const double f = median(t.forward[i]), b = median(t.backward[i]);
            std::printf("    {\"name\": %s, \"type\": %s, \"output_shape\": %s, \"forward_ms\": %.6g, "
                        "\"backward_ms\": %.6g, \"gemm_gflop\": %.6g, \"gemm_bare_ms\": %.6g, "
                        "\"forward_gemm_gflops\": %.6g, \"backward_gemm_gflops\": %.6g}%s\n",
                        checkpoint::json::quote(model.layer(i).name()).c_str(),
                        checkpoint::json::quote(model.layer(i).type()).c_str(),
                        shape_json(model.layer_output_shape(i)).c_str(), ms(f), ms(b),
                        (g.forward_flops + g.backward_flops) / 1e9, ms(g.forward_bare_s + g.backward_bare_s),
                        f > 0 ? g.forward_flops / f / 1e9 : 0.0, b > 0 ? g.backward_flops / b / 1e9 : 0.0,
                        i + 1 < layers ? "," : "");
        }
        std::printf("  ],\n  \"loss_ms\": %.6g,\n", ms(median(t.loss)));
        std::printf("  \"step_ms\": {\"total\": %.6g, \"input\": %.6g, \"forward_backward\": %.6g, "
                    "\"allreduce\": %.6g, \"optimizer\": %.6g},\n",
                    ms(step_s), ms(median(t.input)), ms(median(t.forward_backward)), ms(median(t.allreduce)),
                    ms(median(t.optimizer)));
        std::printf("  \"pipelined_step_ms\": %.6g,\n", ms(pipelined_s));
        // JSON has no NaN: a loss that diverged is null, as evaluate --json writes it.
        char loss_text[32] = "null";
        if (std::isfinite(final_loss)) std::snprintf(loss_text, sizeof loss_text, "%.6g", final_loss);
        std::printf("  \"samples_per_second\": %.6g,\n  \"final_loss\": %s,\n", samples_per_s, loss_text);
        std::printf("  \"gemm_epilogue_shapes\": {\"asked\": %zu, \"taken\": %zu},\n  \"gemms\": [\n", epilogues.asked,
                    epilogues.taken);
        for (size_t i = 0; i < shapes.size(); ++i) {
            const GemmShape& s = shapes[i];
            std::printf("    {\"layer\": %s, \"pass\": \"%s\", \"m\": %d, \"n\": %d, \"k\": %d, \"op\": \"%c%c\", "
                        "\"gflop\": %.6g, \"bare_gflops\": %.6g%s}%s\n",
                        checkpoint::json::quote(model.layer(s.layer).name()).c_str(), s.pass.c_str(), s.m, s.n, s.k,
                        s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.flops() / 1e9, rates[i],
                        other_rates.empty() ? ""
                                            : (", \"bare_gflops_other_mode\": " + std::to_string(other_rates[i])).c_str(),
                        i + 1 < shapes.size() ? "," : "");
        }
        std::printf("  ],\n  \"gemm_gflop_per_step\": %.6g,\n  \"gemm_bare_ms_per_step\": %.6g,\n", gemm_flops / 1e9,
                    ms(bare_s));
        if (!other_rates.empty())
            std::printf("  \"other_mode\": %s,\n  \"bare_gemm_gflops_other_mode\": %.6g,\n",
                        checkpoint::json::quote(other_mode).c_str(), gemm_flops / other_bare_s / 1e9);
        if (!cast_rates.empty())
            std::printf("  \"bare_gemm_gflops_with_casts\": %.6g,\n  \"fraction_of_bare_gemm_with_casts\": %.6g,\n",
                        gemm_flops / cast_bare_s / 1e9, cast_bare_s / pipelined_s);
        std::printf("  \"step_gemm_gflops\": %.6g,\n  \"bare_gemm_gflops\": %.6g,\n  \"fraction_of_bare_gemm\": %.6g\n}\n",
                    gemm_flops / pipelined_s / 1e9, bare_s > 0 ? gemm_flops / bare_s / 1e9 : 0.0,
                    bare_s > 0 ? bare_s / pipelined_s : 0.0);
        return 0;
    }

    std::printf("gputrain bench %s: %s; %lld warm-up + %lld timed steps; medians of replica %d's steps\n\n",
                args.common.config_path.c_str(), strategy.describe(batch).c_str(), (long long)args.warmup,
                (long long)args.steps, 0);
    int name_width = 20;  // the longest layer name (a block's scoped names run long)
    for (size_t i = 0; i < layers; ++i) name_width = std::max(name_width, static_cast<int>(model.layer(i).name().size()));
    std::printf("%-*s %-12s %-16s %12s %12s %14s %14s\n", name_width, "layer", "type", "output", "forward ms",
                "backward ms", "fwd GFLOP/s", "bwd GFLOP/s");
    for (size_t i = 0; i < layers; ++i) {
        const double f = median(t.forward[i]), b = median(t.backward[i]);
        const LayerGemm& g = per_layer[i];
        char fr[32] = "", br[32] = "";
        if (g.forward_flops > 0) std::snprintf(fr, sizeof fr, "%.1f", g.forward_flops / f / 1e9);
        if (g.backward_flops > 0) std::snprintf(br, sizeof br, "%.1f", g.backward_flops / b / 1e9);
        std::printf("%-*s %-12s %-16s %12.4f %12.4f %14s %14s\n", name_width, model.layer(i).name().c_str(),
                    model.layer(i).type().c_str(), shape_to_string(model.layer_output_shape(i)).c_str(), ms(f), ms(b),
                    fr, br);
    }
    std::printf("%-*s %-12s %-16s %12.4f\n", name_width, "(loss)", model.loss().from_logits() ? "softmax+xent" : "loss", "",
                ms(median(t.loss)));
    const bool augmenting = !batches.stored.empty();
    std::printf("\nstep: %.4f ms = %s %.4f + forward+backward %.4f + all-reduce %.4f + optimizer %.4f "
                "(medians; need not add up)\n",
                ms(step_s), augmenting ? "input copy + prepare (data.augment)" : "input copy", ms(median(t.input)),
                ms(median(t.forward_backward)), ms(median(t.allreduce)), ms(median(t.optimizer)));
    std::printf("all-reduce: %zu floats (%.2f MB) of gradients a step%s\n", reduced_floats,
                static_cast<double>(reduced_floats) * 4.0 / 1e6,
                frozen_floats > 0 ? (", frozen layers' " + std::to_string(frozen_floats) + " floats left out").c_str()
                                  : "");
    if (augmenting)
        std::printf("input pipeline: %.1f%% of the step (the shard copied as stored, made floats and augmented)\n",
                    step_s > 0 ? 100.0 * median(t.input) / step_s : 0.0);
    std::printf("step queued as fit queues it (no timing between parts, no CUDA graph; %s): %.4f ms\n",
                augmenting                     ? "shards copied in as stored, prepared and augmented in the step"
                : backend0.has_device_memory() ? "shards copied from device memory, as data.resident"
                                               : "shards copied in",
                ms(pipelined_s));
    std::printf("throughput at that step: %.1f samples/s (global batch %lld); loss of the last timed step: %.4f\n",
                samples_per_s, (long long)batch, final_loss);
    const std::string epilogues_unused = config::gemm_epilogues_unused_reason(cfg);
    if (cfg.training.gemm_epilogues && backend0.has_device_memory() && !epilogues_unused.empty())
        std::printf("%s\n", epilogues_unused.c_str());
    else if (cfg.training.gemm_epilogues && backend0.has_device_memory())
        std::printf("GEMM epilogues: %zu of %zu GEMM shapes ran inside cuBLASLt's GEMM; the rest took the plain path\n",
                    epilogues.taken, epilogues.asked);
    if (shapes.empty()) return 0;
    std::printf("\nDense GEMMs of replica 0 (%d rows), bare = %s's GEMM alone on that shape%s:\n", rows0,
                replicas[0]->backend().name().c_str(),
                cast_rates.empty() ? "" : ", on 16-bit copies made beforehand (no cast timed)");
    std::printf("%-*s %-12s %-22s %10s %14s%s\n", name_width, "layer", "pass", "m x n x k (op)", "GFLOP", "bare GFLOP/s",
                other_rates.empty() ? "" : "   other mode*");
    for (size_t i = 0; i < shapes.size(); ++i) {
        const GemmShape& s = shapes[i];
        char dims[64], other[32] = "";
        std::snprintf(dims, sizeof dims, "%dx%dx%d (%c%c)", s.m, s.n, s.k, s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N');
        if (!other_rates.empty()) std::snprintf(other, sizeof other, " %14.1f", other_rates[i]);
        std::printf("%-*s %-12s %-22s %10.4g %14.1f%s\n", name_width, model.layer(s.layer).name().c_str(), s.pass.c_str(), dims,
                    s.flops() / 1e9, rates[i], other);
    }
    std::printf("dense GEMMs per step: %.4g GFLOP; bare %.4f ms (%.1f GFLOP/s); the whole step runs them at "
                "%.1f GFLOP/s = %.0f%% of bare\n",
                gemm_flops / 1e9, ms(bare_s), gemm_flops / bare_s / 1e9, gemm_flops / pipelined_s / 1e9,
                100.0 * bare_s / pipelined_s);
    if (!cast_rates.empty())
        std::printf("with the casts of a GEMM that keeps no copies (both operands rounded every call): %.4f ms "
                    "(%.1f GFLOP/s); the step runs at %.0f%% of that\n",
                    ms(cast_bare_s), gemm_flops / cast_bare_s / 1e9, 100.0 * cast_bare_s / pipelined_s);
    if (!other_rates.empty())
        std::printf("* other mode: %s, bare %.4f ms (%.1f GFLOP/s) for the same GEMMs\n", other_mode.c_str(),
                    ms(other_bare_s), gemm_flops / other_bare_s / 1e9);
    return 0;
}

}  // namespace

Action add_bench_command(CLI::App& app) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App* cmd = app.add_subcommand(
        "bench", "Time training steps of a config (like 'caffe time'): each layer's forward and backward, the step "
                 "split into input / forward+backward / all-reduce / optimizer, then the step queued as fit queues "
                 "it and samples/s at it, and each dense layer's GEMM rate against the bare GEMM; writes nothing");
    cmd->add_option("config", args->common.config_path, "YAML config file")->required();
    cmd->add_option("--set", args->common.overrides, "Override a config key, e.g. --set training.batch_size=512 "
                                                     "(repeatable)")
        ->allow_extra_args(false);
    cmd->add_option("--device", args->common.device, "auto, cpu or gpu: decides the replicas, as for fit")
        ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
    cmd->add_option("--replicas", args->common.replicas, "Number of CPU replicas (threads)")->check(replica_count());
    cmd->add_option("--steps", args->steps, "Timed training steps (default 20)")->check(step_count(1));
    cmd->add_option("--warmup", args->warmup, "Untimed steps first (default 3)")->check(step_count(0));
    cmd->add_flag("--json", args->json, "Print one JSON object instead of the tables");
    return [args] { return run_bench(*args); };
}

}  // namespace gputrain::cli
