#include "train/replica.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "train/input_plan.hpp"

namespace gputrain::train {

namespace {

// training.precision as the backend's Precision.
Precision backend_precision(config::Precision precision) {
    switch (precision) {
        case config::Precision::fp32: return Precision::fp32;
        case config::Precision::tf32: return Precision::tf32;
        case config::Precision::bf16: return Precision::bf16;
        case config::Precision::fp16: return Precision::fp16;
    }
    return Precision::fp32;
}

}  // namespace

std::vector<std::pair<size_t, size_t>> decay_exempt(const nn::Model& model, const std::vector<std::string>& kinds) {
    const auto listed = [&](const char* kind) { return std::find(kinds.begin(), kinds.end(), kind) != kinds.end(); };
    const std::vector<size_t>& offsets = model.layer_param_offsets();
    std::vector<std::pair<size_t, size_t>> out;
    for (const nn::ParamView& view : model.params()) {
        // The layer that owns the view: the last whose first float is at or before it.
        size_t layer = 0;
        while (layer + 1 < model.layer_count() && offsets[layer + 1] <= view.offset) ++layer;
        const std::string type = model.layer(layer).type();
        const std::string param = view.name.substr(view.name.rfind('/') + 1);
        const bool norm = type == "layer_norm" || type == "rms_norm" || type == "batch_norm";
        const bool embedding = type == "embedding" || type == "positional_embedding";
        const bool bias = param == "bias" || param.ends_with("_bias");
        if ((listed("norm") && norm) || (listed("embedding") && embedding) || (listed("bias") && bias))
            out.emplace_back(view.offset, view.count);
    }
    return out;
}

Replica::Replica(const config::RunConfig& cfg, std::unique_ptr<Backend> backend,
                 std::unique_ptr<dist::Communicator> comm, int64_t max_shard_rows, ReplicaUse use)
    : backend_(std::move(backend)), comm_(std::move(comm)) {
    backend_->set_precision(backend_precision(cfg.training.precision));
    backend_->set_gemm_input_cast(cfg.training.cast_gemm_inputs);
    backend_->set_gemm_epilogues(cfg.training.gemm_epilogues);
    backend_->set_deterministic(cfg.training.deterministic);
    const int64_t rows = std::max<int64_t>(1, max_shard_rows);
    max_rows_ = rows;
    // training.accumulate_steps K: the shard runs through the model in K
    // micro-batches (Step), so the model holds activations for a Kth of it.
    const int64_t k = use == ReplicaUse::training ? std::max<int64_t>(1, cfg.training.accumulate_steps) : 1;
    model_ = std::make_unique<nn::Model>(cfg.model, cfg.loss, *backend_, (rows + k - 1) / k, cfg.training.seed,
                                         use == ReplicaUse::training ? nn::ModelUse::training : nn::ModelUse::inference);
    model_->loss().set_metric(cfg.metric() == "mse" ? math::RegressionMetric::mse : math::RegressionMetric::mae);
    if (use == ReplicaUse::training) {
        optimizer_ = optim::make_optimizer(cfg.optimizer, *backend_, model_->param_count());
        // training.ema: the average (its first step copies the weights), and
        // room for the weights while validation runs on the average.
        if (cfg.training.ema.enabled) {
            const size_t bytes = std::max<size_t>(1, model_->param_count()) * sizeof(float);
            ema_ = own<float>(bytes);
            backend_->copy(ema_, model_->param_data(), model_->param_count() * sizeof(float));
            if (cfg.training.ema.evaluate) ema_swap_ = own<float>(bytes);
        }
        if (!cfg.optimizer.no_decay.empty()) optimizer_->set_decay_exempt(decay_exempt(*model_, cfg.optimizer.no_decay));
        // Layers' lr_multiplier: their trainable ranges of the flat buffer.
        std::vector<optim::Optimizer::RangeScale> scales;
        const auto& offsets = model_->layer_param_offsets();
        for (size_t i = 0; i < model_->layer_count(); ++i)
            if (model_->layer(i).lr_multiplier() != 1.0 && offsets[i + 1] > offsets[i])
                scales.push_back({offsets[i], offsets[i + 1] - offsets[i], model_->layer(i).lr_multiplier()});
        if (!scales.empty()) optimizer_->set_lr_multipliers(scales);
    }
    sample_elements_ = shape_elements(model_->input_shape());
    const size_t input_bytes = static_cast<size_t>(rows * sample_elements_) * sizeof(float);
    const size_t label_bytes = static_cast<size_t>(rows) * sizeof(int32_t);
    augment_ = use == ReplicaUse::training && !cfg.data.augment.empty();
    plan_ = augment_plan(cfg.data.augment, model_->input_shape(), cfg.training.seed);
    staging_ = backend_->has_device_memory();
    for (int slot = 0; slot < (staging_ ? 2 : 1); ++slot) {
        inputs_[slot] = own<float>(input_bytes);
        labels_[slot] = own<int32_t>(label_bytes);
        // Augmented rows are copied as stored (at most floats) with their ids.
        if (augment_) {
            rows_[slot] = own<float>(input_bytes);
            ids_[slot] = own<int32_t>(label_bytes);
        }
        if (!staging_) continue;
        pinned_rows_[slot] = own_pinned<float>(input_bytes);  // rows as stored: floats, or fewer bytes, or grown
        pinned_labels_[slot] = own_pinned<int32_t>(label_bytes);
        if (augment_) pinned_ids_[slot] = own_pinned<int32_t>(label_bytes);
    }
    rows_capacity_ = augment_ ? input_bytes : 0;
    pinned_capacity_ = staging_ ? input_bytes : 0;
    stats_ = own<float>(2 * sizeof(float));
    shard_params_ = own<int64_t>(2 * sizeof(int64_t));
    // Until set_input_format: floats as the model reads them, padded with 0.
    host_table_.assign(static_cast<size_t>(plan_.channels), 0.0f);
    table_ = own<float>(host_table_.size() * sizeof(float));
    backend_->copy_to_device(table_, host_table_.data(), host_table_.size() * sizeof(float));
    guard_ = std::make_unique<StepGuard>(*backend_);
    graphs_ = std::make_unique<StepGraphs>(*backend_, /*enabled=*/false);
    // The first staged copy must not overtake the zeroing of the buffers above.
    backend_->wait_copies();
}

void Replica::abort() {
    comm_->abort();
    if (shared_update_) shared_update_->abort();
}

void Replica::share_update(std::shared_ptr<SharedUpdate> shared, int index, Replica& first) {
    const auto [begin, end] = shared->slice(index);
    optimizer().set_shard(begin, end);
    if (&first != this) {
        optimizer().share_state_of(first.optimizer());
        if (ema_) {  // the weights' copy made at construction: the same values; this one's is freed
            for (Buffer& b : owned_)
                if (b.get() == ema_) b.reset();
            ema_ = first.ema_;
        }
    }
    shared_update_ = std::move(shared);
    shared_index_ = index;
}

void share_updates(const std::vector<std::unique_ptr<Replica>>& replicas) {
    if (replicas.size() < 2) return;
    std::vector<float*> weights;
    for (const auto& r : replicas) {
        if (r->backend().has_device_memory()) return;  // each GPU holds its own
        weights.push_back(r->model().param_data());
    }
    auto shared = std::make_shared<SharedUpdate>(weights, replicas[0]->model().param_count());
    for (size_t i = 0; i < replicas.size(); ++i) replicas[i]->share_update(shared, static_cast<int>(i), *replicas[0]);
}

optim::Optimizer& Replica::optimizer() {
    if (!optimizer_) throw Error("internal: the optimizer of a replica built for inference");
    return *optimizer_;
}

Replica::~Replica() {
    // A copy staged for a step that never came (training stopped) may still
    // read the pinned buffers. A destructor must not throw: a failed wait (a
    // lost device) leaves nothing to wait for.
    for (uint64_t ticket : copy_tickets_) {
        try {
            backend_->wait_copy_on_host(ticket);
        } catch (...) {
        }
    }
    // The buffers (owned_, pinned_owned_, resident_blocks_), guard_ and graphs_
    // go next, before backend_ (members are destroyed in reverse order).
}

void Replica::release_resident() {
    if (resident_owned_)
        for (Buffer& block : resident_blocks_) block.reset();
    resident_inputs_ = nullptr;
    resident_labels_ = resident_order_ = nullptr;
    resident_owned_ = false;
    resident_rows_ = 0;
    host_order_.clear();
}

void Replica::load_shard(const float* host_inputs, const int32_t* host_labels, int64_t begin, int64_t end) {
    gather_resident_ = false;
    if (end <= begin) return;
    if (end - begin > max_rows_)
        throw Error("internal: a shard of " + std::to_string(end - begin) + " rows for input buffers of " +
                    std::to_string(max_rows_) + " (a larger batch than the replicas were built for)");
    backend_->copy_to_device(inputs(), host_inputs + begin * sample_elements_,
                             static_cast<size_t>((end - begin) * sample_elements_) * sizeof(float));
    backend_->copy_to_device(labels(), host_labels + begin * label_width_,
                             static_cast<size_t>((end - begin) * label_width_) * sizeof(int32_t));
}

void Replica::set_target_format(int width, bool real) {
    if (real != model_->loss().real_targets()) {
        graphs_->forget();  // recorded steps run the other loss kernel
        model_->loss().set_real_targets(real);
    }
    if (width == label_width_) return;
    graphs_->forget();  // recorded steps read the old label buffers
    label_width_ = width;
    const size_t label_bytes = static_cast<size_t>(max_rows_) * static_cast<size_t>(width) * sizeof(int32_t);
    for (int slot = 0; slot < (staging_ ? 2 : 1); ++slot) {
        labels_[slot] = own<int32_t>(label_bytes);
        if (staging_) pinned_labels_[slot] = own_pinned<int32_t>(label_bytes);
    }
    backend_->wait_copies();
}

void Replica::set_input_format(const data::Dataset& like) {
    set_target_format(like.label_width, like.real_targets);
    // A data set made by hand (tests) may have no table: floats padded with 0.
    // Token ids have none: they are read as they are.
    const bool tokens = like.type == data::SampleType::token;
    const std::vector<float> table = like.type == data::SampleType::f32 && like.table.empty()
                                         ? std::vector<float>(static_cast<size_t>(plan_.channels), 0.0f)
                                         : like.table;
    const size_t row_bytes = like.row_bytes();
    if (like.type == type_ && table == host_table_ && row_bytes == this->row_bytes()) return;
    if (!tokens && table.size() != static_cast<size_t>(plan_.channels) * (like.type == data::SampleType::u8 ? 256 : 1))
        throw Error("internal: a value table of " + std::to_string(like.table.size()) + " entries for " +
                    std::to_string(plan_.channels) + " channels");
    graphs_->forget();  // recorded steps read the old table and buffers
    type_ = like.type;
    stored_row_bytes_ = row_bytes;
    token_bytes_ = tokens ? like.tokens->width() : 0;
    host_table_ = table;
    table_ = own<float>(std::max<size_t>(1, host_table_.size()) * sizeof(float));
    backend_->copy_to_device(table_, host_table_.data(), host_table_.size() * sizeof(float));
    // Bytes and ids are copied as stored and made floats by prepare_shard.
    const size_t bytes = static_cast<size_t>(max_rows_) * row_bytes;
    for (int slot = 0; slot < (staging_ ? 2 : 1); ++slot) {
        if (type_ != data::SampleType::f32 && bytes > rows_capacity_) rows_[slot] = own<uint8_t>(bytes);
        if (staging_ && bytes > pinned_capacity_) pinned_rows_[slot] = own_pinned<uint8_t>(bytes);
    }
    if (type_ != data::SampleType::f32) rows_capacity_ = std::max(rows_capacity_, bytes);
    if (staging_) pinned_capacity_ = std::max(pinned_capacity_, bytes);
    backend_->wait_copies();
}

void Replica::load_shard(const data::Batch& batch, int64_t begin, int64_t end, bool augmenting) {
    if (batch.type != type_) throw Error("internal: a batch stored otherwise than set_input_format said");
    gather_resident_ = false;
    if (!needs_prepare(augmenting)) {
        load_shard(batch.inputs.data(), batch.labels.data(), begin, end);
        return;
    }
    if (end <= begin) return;
    if (end - begin > max_rows_)
        throw Error("internal: a shard of " + std::to_string(end - begin) + " rows for input buffers of " +
                    std::to_string(max_rows_) + " (a larger batch than the replicas were built for)");
    backend_->copy_to_device(rows_[current_], batch.row(begin), static_cast<size_t>(end - begin) * row_bytes());
    if (!batch.labels.empty())  // token windows: made by prepare_shard
        backend_->copy_to_device(labels(), batch.labels.data() + begin * label_width_,
                                 static_cast<size_t>((end - begin) * label_width_) * sizeof(int32_t));
    if (augmenting && augment_)
        backend_->copy_to_device(ids_[current_], batch.ids.data() + begin,
                                 static_cast<size_t>(end - begin) * sizeof(int32_t));
    shard_rows_ = static_cast<int>(end - begin);
}

bool Replica::make_resident(const data::Dataset& train, config::ResidentMode mode) {
    // A new fit: steps recorded for the last one may gather from the set
    // released below, or lack the gather a resident set needs.
    graphs_->forget();
    // A second fit() on the same replicas: the set is uploaded again (it may be another one).
    if (resident()) {
        release_resident();
        staging_ = backend_->has_device_memory();
    }
    set_input_format(train);
    if (mode == config::ResidentMode::off || train.size() == 0) return false;
    // data.stream: the rows are not in memory; the loader reads each batch's.
    if (train.streamed()) {
        if (mode == config::ResidentMode::on)
            throw ConfigError("data.resident: true holds the training set in memory, and data.stream reads it from "
                              "disk; use data.resident: auto or false");
        return false;
    }
    if (train.size() > INT32_MAX) {
        if (mode == config::ResidentMode::automatic) return false;
        throw ConfigError("data.resident: the training set has more than 2^31 samples; use data.resident: false");
    }
    const bool tokens = train.type == data::SampleType::token;  // labels: the ids one further on
    resident_token_stride_ = tokens ? static_cast<size_t>(train.window_stride) : 0;
    if (!backend_->has_device_memory()) {  // the CPU: rows are read from `train` itself
        // ... by an order of 4 bytes a sample in each replica: above the
        // size whose epoch order the loader computes instead of holding
        // (data::EpochOrder), auto leaves the gathering to the loader.
        if (mode == config::ResidentMode::automatic && train.size() > data::EpochOrder::kMaterializedLimit)
            return false;
        resident_inputs_ = train.row(0);
        resident_labels_ = tokens ? nullptr : const_cast<int32_t*>(train.labels.data());
        host_order_.assign(static_cast<size_t>(train.size()), 0);
        resident_order_ = host_order_.data();
        resident_rows_ = train.size();
        return true;
    }
    // Token windows: the ids they span (windows overlap by one id), no labels.
    const size_t input_bytes =
        tokens ? static_cast<size_t>(train.window_start(train.size() - 1) - train.window_start(0) + train.stored_elements()) *
                     train.element_bytes()
               : static_cast<size_t>(train.size()) * train.row_bytes();
    const size_t label_bytes = train.labels.size() * sizeof(int32_t);
    const size_t order_bytes = static_cast<size_t>(train.size()) * sizeof(int32_t);
    const size_t bytes = input_bytes + label_bytes + order_bytes;  // inputs, labels, the epoch's order
    const size_t free_bytes = backend_->free_device_bytes();
    if (mode == config::ResidentMode::automatic && bytes > free_bytes / 2) return false;
    if (bytes > free_bytes)
        throw ConfigError("data.resident: true: the training set needs " + std::to_string(bytes >> 20) +
                          " MiB on " + backend_->name() + ", which has " + std::to_string(free_bytes >> 20) +
                          " MiB free; use data.resident: auto or false");
    resident_blocks_[0] = Buffer(*backend_, input_bytes);
    resident_blocks_[1] = Buffer(*backend_, std::max<size_t>(1, label_bytes));
    resident_blocks_[2] = Buffer(*backend_, order_bytes);
    resident_owned_ = true;  // released by release_resident, or with the replica
    resident_inputs_ = resident_blocks_[0].get();
    resident_labels_ = tokens ? nullptr : resident_blocks_[1].as<int32_t>();
    resident_order_ = resident_blocks_[2].as<int32_t>();
    backend_->copy_to_device(resident_blocks_[0].get(), train.row(0), input_bytes);
    if (!tokens) backend_->copy_to_device(resident_labels_, train.labels.data(), label_bytes);
    resident_rows_ = train.size();
    resident_owned_ = true;
    staging_ = false;  // nothing to copy ahead any more
    return true;
}

void Replica::begin_epoch(int64_t samples, bool shuffle, uint64_t seed, int64_t epoch) {
    staged_ = false;
    if (!resident()) return;
    const data::EpochOrder order(samples, shuffle, seed, epoch);
    std::vector<int32_t> order32(static_cast<size_t>(order.size()));  // samples <= INT32_MAX when resident
    for (int64_t i = 0; i < order.size(); ++i) order32[static_cast<size_t>(i)] = static_cast<int32_t>(order[i]);
    backend_->copy_to_device(resident_order_, order32.data(), order32.size() * sizeof(int32_t));
}

void Replica::load_training_shard(const data::Batch& batch, int64_t global_batch) {
    const int64_t begin = batch.shard_begin[static_cast<size_t>(rank())];
    const int64_t end = batch.shard_begin[static_cast<size_t>(rank()) + 1];
    // The batch's rows are order[step * global_batch + row], as the loader took them.
    const int64_t params[2] = {batch.step * global_batch + begin, batch.epoch};
    if (resident() || augment_) backend_->upload(shard_params_, params, sizeof params);
    gather_resident_ = resident();
    if (resident()) {
        shard_rows_ = static_cast<int>(end - begin);
        return;
    }
    if (staged_ && staged_step_ == batch.step) {
        staged_ = false;
        current_ = 1 - current_;
        shard_rows_ = static_cast<int>(end - begin);
        // Compute waits for the copy; the next staged copy (into the buffer
        // this step leaves) waits for the compute work queued until here.
        backend_->wait_copies();
        return;
    }
    // The batch holds rows [first_row, ...) of the global batch (all of them
    // unless data.shard_files gave this worker only its replicas' rows).
    load_shard(batch, begin - batch.first_row, end - batch.first_row, /*augmenting=*/true);
}

void Replica::prepare_shard(bool augmenting) {
    const bool augment = augmenting && augment_;
    if (!gather_resident_ && !needs_prepare(augment)) return;
    ops::PrepareInputs op{};
    op.source_u8 = type_ == data::SampleType::u8;
    op.sample_elements = static_cast<size_t>(sample_elements_);
    op.params = shard_params_;
    op.table = table_;
    op.augment = augment;
    op.plan = plan_;
    op.rows = shard_rows_;
    op.out = inputs();
    op.label_width = label_width_;
    op.token_bytes = token_bytes_;
    if (gather_resident_) {
        op.source = resident_inputs_;
        op.order = resident_order_;
        op.source_labels = resident_labels_;
        op.labels = labels();
        op.token_stride = resident_token_stride_;  // the text's ids: windows every window_stride ids
    } else {
        op.source = rows_[current_];
        op.ids = ids_[current_];
        op.token_stride = static_cast<size_t>(sample_elements_) + 1;  // rows as copied
        if (token_bytes_) op.labels = labels();
    }
    if (op.rows > 0) run_op(*backend_, op);
}

void Replica::stage_training_shard(const data::Batch& batch) {
    if (!staging_) return;
    const int64_t begin = batch.shard_begin[static_cast<size_t>(rank())];
    const int64_t end = batch.shard_begin[static_cast<size_t>(rank()) + 1];
    const int slot = 1 - current_;
    // The pinned buffer may still be the source of the copy made two steps ago.
    backend_->wait_copy_on_host(copy_tickets_[slot]);
    const bool prepares = needs_prepare(true);
    const size_t input_bytes = static_cast<size_t>(end - begin) * (prepares ? row_bytes() : sample_elements_ * sizeof(float));
    const size_t id_bytes = static_cast<size_t>(end - begin) * sizeof(int32_t);
    const size_t label_bytes = id_bytes * static_cast<size_t>(label_width_);
    const int64_t first = begin - batch.first_row;  // see load_training_shard
    std::memcpy(pinned_rows_[slot], batch.row(first), input_bytes);
    uint64_t ticket =
        backend_->copy_to_device_async(prepares ? rows_[slot] : inputs_[slot], pinned_rows_[slot], input_bytes);
    if (augment_) {
        std::memcpy(pinned_ids_[slot], batch.ids.data() + first, id_bytes);
        ticket = backend_->copy_to_device_async(ids_[slot], pinned_ids_[slot], id_bytes);
    }
    if (!batch.labels.empty()) {  // token windows: made by prepare_shard
        std::memcpy(pinned_labels_[slot], batch.labels.data() + first * label_width_, label_bytes);
        ticket = backend_->copy_to_device_async(labels_[slot], pinned_labels_[slot], label_bytes);
    }
    copy_tickets_[slot] = ticket;
    staged_ = true;
    staged_step_ = batch.step;
}

void Replica::average_state() {
    // The state that training changes (batch norm's moving statistics), which
    // the model lays out first; frozen layers' tensors after it never change.
    const size_t n = model_->averaged_state_count();
    if (comm_->size() == 1 || n == 0) return;
    comm_->allreduce_sum(model_->state_data(), n);
    backend_->scale(model_->state_data(), n, 1.0f / static_cast<float>(comm_->size()));
}

void Replica::use_ema_weights(bool on) {
    if (!ema_ || !ema_swap_) return;
    const size_t bytes = model_->param_count() * sizeof(float);
    if (on) {
        backend_->copy(ema_swap_, model_->param_data(), bytes);
        backend_->copy(model_->param_data(), ema_, bytes);
    } else {
        backend_->copy(model_->param_data(), ema_swap_, bytes);
    }
}

void Replica::reset_stats() { backend_->fill(stats_, 2, 0.0f); }

void Replica::read_stats(double& loss_sum, double& correct) {
    float host[2];
    backend_->copy_to_host(host, stats_, sizeof host);
    loss_sum = host[0];
    correct = host[1];
}

}  // namespace gputrain::train
