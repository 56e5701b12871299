// Replica: what one replica thread owns: its Backend, its copy of the model,
// its optimizer, its rank in the communicator, and the device buffers for one
// shard of a batch and for the running loss/accuracy sums.
//
// Training batches reach the device one of three ways (docs/architecture.md,
// "Input copies"): on the CPU, copied when the step needs them, as always; on
// a GPU, staged one step ahead: copied from pinned host buffers on a copy
// stream while the previous step computes (two shard buffers, used in turn);
// or, with the training set resident on the GPU, gathered there by index.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/buffer.hpp"
#include "backend/ops/prepare_inputs.hpp"
#include "config/run_config.hpp"
#include "data/dataset.hpp"
#include "data/loader.hpp"
#include "dist/communicator.hpp"
#include "nn/model.hpp"
#include "optim/optimizer.hpp"
#include "train/shared_update.hpp"
#include "train/step_graphs.hpp"
#include "train/step_guard.hpp"

namespace gputrain::train {

// What replicas are built for: inference (evaluate, predict) keeps no
// optimizer state, which is twice the weights under Adam.
enum class ReplicaUse { training, inference };

// optimizer.no_decay: the [offset, count) ranges of `model`'s parameters of
// the listed kinds (bias: a layer's bias and *_bias tensors; norm: layer,
// RMS and batch norm's; embedding: token and position tables).
std::vector<std::pair<size_t, size_t>> decay_exempt(const nn::Model& model, const std::vector<std::string>& kinds);

class Replica;
// CPU training replicas of this process, more than one: they share one
// optimizer state and update the weights in slices (SharedUpdate). Nothing
// for GPU replicas (each has its own memory) or inference replicas.
void share_updates(const std::vector<std::unique_ptr<Replica>>& replicas);

class Replica {
public:
    // Allocates everything the replica will need before any collective runs.
    Replica(const config::RunConfig& cfg, std::unique_ptr<Backend> backend,
            std::unique_ptr<dist::Communicator> comm, int64_t max_shard_rows,
            ReplicaUse use = ReplicaUse::training);
    ~Replica();
    Replica(const Replica&) = delete;
    Replica& operator=(const Replica&) = delete;

    Backend& backend() { return *backend_; }
    nn::Model& model() { return *model_; }
    // Throws for an inference replica, which has none.
    optim::Optimizer& optimizer();
    dist::Communicator& comm() { return *comm_; }
    int rank() const { return comm_->rank(); }
    // GPU replicas get their communicator after every replica has allocated its memory.
    void set_comm(std::unique_ptr<dist::Communicator> comm) { comm_ = std::move(comm); }
    // A replica failed: collectives and the shared update's barrier stop waiting (they throw).
    void abort();

    // CPU training replicas of one process (share_updates): one optimizer
    // state and EMA, `first`'s, of which this replica updates slice `index`
    // (SharedUpdate). Before training.
    void share_update(std::shared_ptr<SharedUpdate> shared, int index, Replica& first);
    // Null unless share_update was called.
    SharedUpdate* shared_update() { return shared_update_.get(); }
    int shared_index() const { return shared_index_; }

    // Copies rows [begin, end) of host float inputs (as the model reads them)
    // and labels (label_width each, as set_input_format last said) into the
    // device shard buffers, now.
    void load_shard(const float* host_inputs, const int32_t* host_labels, int64_t begin, int64_t end);
    // The data's storage and value table (bytes or floats; Dataset::table):
    // call with each data set before its batches reach load_shard or
    // load_training_shard (nothing when it is stored as the last one was).
    // Also sets the labels' width and kind (class indices or real-valued
    // targets: Dataset::labels) for the buffers and the loss.
    // Allocates: outside collectives.
    void set_input_format(const data::Dataset& like);
    // The labels' part of set_input_format: `width` values per sample, real-valued targets or class indices.
    void set_target_format(int width, bool real);
    // Copies rows [begin, end) of `batch`'s rows (as stored, with their labels,
    // and with their ids when `augmenting`) into the shard buffers, now;
    // prepare_shard(augmenting) then makes inputs() of them.
    void load_shard(const data::Batch& batch, int64_t begin, int64_t end, bool augmenting);
    // The most rows a shard may have: the input buffers' size.
    int64_t max_rows() const { return max_rows_; }
    // Floats of one input row and int32 values of one label row (inputs(), labels()).
    int64_t sample_elements() const { return sample_elements_; }
    int label_width() const { return label_width_; }
    float* inputs() { return inputs_[current_]; }
    int32_t* labels() { return labels_[current_]; }

    // data.resident (auto | true | false): on a backend with device memory,
    // uploads `train` once when asked to, or (auto) when it takes at most half
    // the free device memory. Call before training, outside collectives (it
    // allocates). ConfigError for `true` when it does not fit. On the CPU
    // (auto or true) nothing is copied: each step's rows are copied straight
    // from `train`, which must outlive the training run, so that no loader
    // thread has to gather batches. Returns whether the set is resident.
    bool make_resident(const data::Dataset& train, config::ResidentMode mode);
    bool resident() const { return resident_rows_ > 0; }

    // Training: call at each epoch's start with what fixes the epoch's sample
    // order (data::epoch_order, which a resident set uploads).
    void begin_epoch(int64_t samples, bool shuffle, uint64_t seed, int64_t epoch);
    // This replica's shard of `batch` (step `batch.step`, batches of
    // `global_batch`) becomes inputs()/labels(): the copy staged during the
    // previous step, else copied now; when resident, its place in the epoch's
    // order is written to the device and prepare_shard() gathers it.
    void load_training_shard(const data::Batch& batch, int64_t global_batch);
    // The first work of a step: makes inputs() (and, when resident, labels())
    // of the shard load_training_shard chose or load_shard copied, as stored:
    // gathered by the epoch's order when the set is resident, bytes made
    // floats, and augmented when `augmenting` and data.augment has steps
    // (ops::PrepareInputs). Nothing when the inputs are already there. It reads
    // the shard's place and epoch from device memory, so it belongs inside the
    // step's recorded graph.
    void prepare_shard(bool augmenting);
    // Whether training batches are augmented (data.augment, a training replica).
    bool augments() const { return augment_; }
    // Whether the trainer should hand over the next step's batch early
    // (stage_training_shard): a GPU whose training set is not resident.
    bool stages_ahead() const { return staging_; }
    // Starts copying this replica's shard of the NEXT step's batch into the
    // other shard buffer while the current step computes.
    void stage_training_shard(const data::Batch& batch);

    // training.ema: the weights' moving average (param_count floats), null without it.
    float* ema() { return ema_; }
    // Validation on the average (training.ema.evaluate): on puts the average
    // in the weights' place (keeping them), off puts them back.
    void use_ema_weights(bool on);

    // Which steps had NaN/Inf gradients, tallied on the device.
    StepGuard& guard() { return *guard_; }
    // The training step as recorded graphs (off until the trainer enables them).
    StepGraphs& graphs() { return *graphs_; }

    // Device running sums: [loss sum, correct].
    float* stats() { return stats_; }
    void reset_stats();
    // Non-trainable state (batch norm's moving statistics) follows each
    // replica's own batches: averages it over the replicas so that every one
    // holds the same state, as the checkpoint (replica 0's) and evaluation
    // assume. Nothing without state or with one replica.
    void average_state();
    // Host copy of the stats.
    void read_stats(double& loss_sum, double& correct);

private:
    std::unique_ptr<Backend> backend_;
    // Every block of backend memory the replica allocates itself (freed before
    // backend_, also when the constructor throws); the pointers below point into them.
    std::vector<Buffer> owned_;
    std::vector<PinnedBuffer> pinned_owned_;
    Buffer resident_blocks_[3];  // a GPU's resident inputs, labels and order
    template <class T>
    T* own(size_t bytes) {
        owned_.emplace_back(*backend_, bytes);
        return owned_.back().as<T>();
    }
    template <class T>
    T* own_pinned(size_t bytes) {
        pinned_owned_.emplace_back(*backend_, bytes);
        return pinned_owned_.back().as<T>();
    }
    std::unique_ptr<dist::Communicator> comm_;
    std::unique_ptr<nn::Model> model_;
    std::unique_ptr<optim::Optimizer> optimizer_;
    int64_t sample_elements_;
    int64_t max_rows_;
    // Shard buffers; [1] only when staging (a GPU), used in turn with [0].
    float* inputs_[2] = {};
    int32_t* labels_[2] = {};
    int label_width_ = 1;
    int current_ = 0;
    // The data's storage (set_input_format) and augmentation. When rows need
    // making (bytes, or augmenting), they are copied as stored into rows_ (and
    // their ids into ids_), and prepare_shard makes inputs_ of them.
    data::SampleType type_ = data::SampleType::f32;
    std::vector<float> host_table_;
    float* table_ = nullptr;         // backend copy of host_table_
    bool augment_ = false;
    ops::AugmentPlan plan_;
    void* rows_[2] = {};
    int32_t* ids_[2] = {};
    bool needs_prepare(bool augmenting) const { return type_ != data::SampleType::f32 || (augmenting && augment_); }
    // A row as stored (Dataset::row_bytes of the set_input_format data; floats until then).
    size_t row_bytes() const { return stored_row_bytes_ ? stored_row_bytes_ : static_cast<size_t>(sample_elements_) * sizeof(float); }
    size_t stored_row_bytes_ = 0;
    int token_bytes_ = 0;  // token windows: bytes an id
    // Bytes of rows_ and pinned_rows_ each (grown by set_input_format).
    size_t rows_capacity_ = 0, pinned_capacity_ = 0;
    // Staging: pinned host copies of the next shard (as stored), one per shard
    // buffer, and the ticket of the copy that last read each.
    bool staging_ = false;
    void* pinned_rows_[2] = {};
    int32_t* pinned_labels_[2] = {};
    int32_t* pinned_ids_[2] = {};
    uint64_t copy_tickets_[2] = {};
    bool staged_ = false;
    int64_t staged_step_ = -1;
    // Resident training set: inputs, labels and the epoch's order on the
    // device; on the CPU the data set's own arrays and a host order (not owned).
    void release_resident();
    int64_t resident_rows_ = 0;
    bool resident_owned_ = false;
    const void* resident_inputs_ = nullptr;  // as stored (type_)
    size_t resident_token_stride_ = 0;       // token windows: ids from one to the next
    int32_t* resident_labels_ = nullptr;
    int32_t* resident_order_ = nullptr;
    std::vector<int32_t> host_order_;
    // Backend memory written before each step: the shard's first position in
    // the epoch's order (resident sets) and the epoch (augmentation's key).
    int64_t* shard_params_ = nullptr;
    int shard_rows_ = 0;
    // The shard to prepare is the resident set's (load_training_shard) rather
    // than rows copied by load_shard (evaluation, or not resident).
    bool gather_resident_ = false;
    float* stats_ = nullptr;
    std::shared_ptr<SharedUpdate> shared_update_;
    int shared_index_ = 0;
    float* ema_ = nullptr;  // the replica's own, or the first's (share_update)
    float* ema_swap_ = nullptr;
    std::unique_ptr<StepGuard> guard_;
    std::unique_ptr<StepGraphs> graphs_;
};

}  // namespace gputrain::train
