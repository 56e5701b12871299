#include "train/replica.hpp"

#include <cstring>

#include "core/error.hpp"

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

Replica::Replica(const config::RunConfig& cfg, std::unique_ptr<Backend> backend,
                 std::unique_ptr<dist::Communicator> comm, int64_t max_shard_rows, ReplicaUse use)
    : backend_(std::move(backend)), comm_(std::move(comm)) {
    backend_->set_precision(backend_precision(cfg.training.precision));
    backend_->set_gemm_input_cast(cfg.training.cast_gemm_inputs);
    backend_->set_gemm_epilogues(cfg.training.gemm_epilogues);
    backend_->set_deterministic(cfg.training.deterministic);
    const int64_t rows = std::max<int64_t>(1, max_shard_rows);
    max_rows_ = rows;
    model_ = std::make_unique<nn::Model>(cfg.model, cfg.loss, *backend_, rows, cfg.training.seed,
                                         use == ReplicaUse::training ? nn::ModelUse::training : nn::ModelUse::inference);
    if (use == ReplicaUse::training) optimizer_ = optim::make_optimizer(cfg.optimizer, *backend_, model_->param_count());
    sample_elements_ = shape_elements(model_->input_shape());
    const size_t input_bytes = static_cast<size_t>(rows * sample_elements_) * sizeof(float);
    const size_t label_bytes = static_cast<size_t>(rows) * sizeof(int32_t);
    staging_ = backend_->has_device_memory();
    for (int slot = 0; slot < (staging_ ? 2 : 1); ++slot) {
        inputs_[slot] = own<float>(input_bytes);
        labels_[slot] = own<int32_t>(label_bytes);
        if (!staging_) continue;
        pinned_inputs_[slot] = own_pinned<float>(input_bytes);
        pinned_labels_[slot] = own_pinned<int32_t>(label_bytes);
    }
    stats_ = own<float>(2 * sizeof(float));
    shard_position_ = own<int64_t>(sizeof(int64_t));
    guard_ = std::make_unique<StepGuard>(*backend_);
    graphs_ = std::make_unique<StepGraphs>(*backend_, /*enabled=*/false);
    // The first staged copy must not overtake the zeroing of the buffers above.
    backend_->wait_copies();
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
    if (end <= begin) return;
    if (end - begin > max_rows_)
        throw Error("internal: a shard of " + std::to_string(end - begin) + " rows for input buffers of " +
                    std::to_string(max_rows_) + " (a larger batch than the replicas were built for)");
    backend_->copy_to_device(inputs(), host_inputs + begin * sample_elements_,
                             static_cast<size_t>((end - begin) * sample_elements_) * sizeof(float));
    backend_->copy_to_device(labels(), host_labels + begin, static_cast<size_t>(end - begin) * sizeof(int32_t));
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
    if (mode == config::ResidentMode::off || train.size() == 0) return false;
    if (train.size() > INT32_MAX) {
        if (mode == config::ResidentMode::automatic) return false;
        throw ConfigError("data.resident: the training set has more than 2^31 samples; use data.resident: false");
    }
    if (!backend_->has_device_memory()) {  // the CPU: rows are copied from `train` itself
        resident_inputs_ = const_cast<float*>(train.inputs.data());
        resident_labels_ = const_cast<int32_t*>(train.labels.data());
        host_order_.assign(static_cast<size_t>(train.size()), 0);
        resident_order_ = host_order_.data();
        resident_rows_ = train.size();
        return true;
    }
    const size_t input_bytes = train.inputs.size() * sizeof(float);
    const size_t label_bytes = train.labels.size() * sizeof(int32_t);
    const size_t bytes = input_bytes + 2 * label_bytes;  // inputs, labels, the epoch's order
    const size_t free_bytes = backend_->free_device_bytes();
    if (mode == config::ResidentMode::automatic && bytes > free_bytes / 2) return false;
    if (bytes > free_bytes)
        throw ConfigError("data.resident: true: the training set needs " + std::to_string(bytes >> 20) +
                          " MiB on " + backend_->name() + ", which has " + std::to_string(free_bytes >> 20) +
                          " MiB free; use data.resident: auto or false");
    resident_blocks_[0] = Buffer(*backend_, input_bytes);
    resident_blocks_[1] = Buffer(*backend_, label_bytes);
    resident_blocks_[2] = Buffer(*backend_, label_bytes);
    resident_owned_ = true;  // released by release_resident, or with the replica
    resident_inputs_ = resident_blocks_[0].floats();
    resident_labels_ = resident_blocks_[1].as<int32_t>();
    resident_order_ = resident_blocks_[2].as<int32_t>();
    backend_->copy_to_device(resident_inputs_, train.inputs.data(), input_bytes);
    backend_->copy_to_device(resident_labels_, train.labels.data(), label_bytes);
    resident_rows_ = train.size();
    resident_owned_ = true;
    staging_ = false;  // nothing to copy ahead any more
    return true;
}

void Replica::begin_epoch(int64_t samples, bool shuffle, uint64_t seed, int64_t epoch) {
    staged_ = false;
    if (!resident()) return;
    const std::vector<int64_t> order = data::epoch_order(samples, shuffle, seed, epoch);
    std::vector<int32_t> order32(order.begin(), order.end());
    backend_->copy_to_device(resident_order_, order32.data(), order32.size() * sizeof(int32_t));
}

void Replica::load_training_shard(const data::Batch& batch, int64_t global_batch) {
    const int64_t begin = batch.shard_begin[static_cast<size_t>(rank())];
    const int64_t end = batch.shard_begin[static_cast<size_t>(rank()) + 1];
    if (resident()) {
        // The batch's rows are order[step * global_batch + row], as the loader took them.
        const int64_t position = batch.step * global_batch + begin;
        backend_->upload(shard_position_, &position, sizeof position);
        shard_rows_ = static_cast<int>(end - begin);
        return;
    }
    if (staged_ && staged_step_ == batch.step) {
        staged_ = false;
        current_ = 1 - current_;
        // Compute waits for the copy; the next staged copy (into the buffer
        // this step leaves) waits for the compute work queued until here.
        backend_->wait_copies();
        return;
    }
    // The batch holds rows [first_row, ...) of the global batch (all of them
    // unless data.shard_files gave this worker only its replicas' rows).
    load_shard(batch.inputs.data(), batch.labels.data(), begin - batch.first_row, end - batch.first_row);
}

void Replica::gather_shard() {
    if (!resident()) return;
    backend_->gather_batch(inputs(), labels(), resident_inputs_, resident_labels_,
                           static_cast<size_t>(sample_elements_), resident_order_, shard_position_, shard_rows_);
}

void Replica::stage_training_shard(const data::Batch& batch) {
    if (!staging_) return;
    const int64_t begin = batch.shard_begin[static_cast<size_t>(rank())];
    const int64_t end = batch.shard_begin[static_cast<size_t>(rank()) + 1];
    const int slot = 1 - current_;
    // The pinned buffer may still be the source of the copy made two steps ago.
    backend_->wait_copy_on_host(copy_tickets_[slot]);
    const size_t input_bytes = static_cast<size_t>((end - begin) * sample_elements_) * sizeof(float);
    const size_t label_bytes = static_cast<size_t>(end - begin) * sizeof(int32_t);
    const int64_t first = begin - batch.first_row;  // see load_training_shard
    std::memcpy(pinned_inputs_[slot], batch.inputs.data() + first * sample_elements_, input_bytes);
    std::memcpy(pinned_labels_[slot], batch.labels.data() + first, label_bytes);
    backend_->copy_to_device_async(inputs_[slot], pinned_inputs_[slot], input_bytes);
    copy_tickets_[slot] = backend_->copy_to_device_async(labels_[slot], pinned_labels_[slot], label_bytes);
    staged_ = true;
    staged_step_ = batch.step;
}

void Replica::average_state() {
    if (comm_->size() == 1 || model_->state_count() == 0) return;
    comm_->allreduce_sum(model_->state_data(), model_->state_count());
    backend_->scale(model_->state_data(), model_->state_count(), 1.0f / static_cast<float>(comm_->size()));
}

void Replica::reset_stats() { backend_->fill(stats_, 2, 0.0f); }

void Replica::read_stats(double& loss_sum, double& correct) {
    float host[2];
    backend_->copy_to_host(host, stats_, sizeof host);
    loss_sum = host[0];
    correct = host[1];
}

}  // namespace gputrain::train
