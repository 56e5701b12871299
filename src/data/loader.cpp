#include "data/loader.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "data/row_range.hpp"

namespace gputrain::data {
namespace {

// Copies the samples order[begin, begin + rows) into a Batch's inputs (or
// pixels) and labels; ids are their indices in the whole training set (a
// worker's part starts at `first_id`).
std::shared_ptr<Batch> gather_rows(const Dataset& dataset, const EpochOrder& order, int64_t begin,
                                   int64_t rows, int64_t first_id = 0) {
    auto batch = std::make_shared<Batch>();
    const int64_t elements = dataset.sample_elements();
    batch->type = dataset.type;
    batch->row_bytes = dataset.row_bytes();
    if (dataset.type == SampleType::f32)
        batch->inputs.resize(static_cast<size_t>(rows * elements));
    else
        batch->stored.resize(static_cast<size_t>(rows) * batch->row_bytes);
    const int width = dataset.label_width;
    const bool labelled = dataset.type != SampleType::token;
    batch->label_width = width;
    if (labelled) batch->labels.resize(static_cast<size_t>(rows * width));
    batch->ids.resize(static_cast<size_t>(rows));
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t sample = order[begin + row];
        dataset.read_rows(sample, 1, const_cast<void*>(batch->row(row)));
        if (labelled) std::copy_n(dataset.labels.begin() + sample * width, width, batch->labels.begin() + row * width);
        // The augmentation's key (image sets, far below 2^31 samples; a text's
        // windows, which may number more, are not augmented).
        batch->ids[static_cast<size_t>(row)] = static_cast<int32_t>(first_id + sample);
    }
    return batch;
}

// Copies the samples of global batch `step` (in the epoch's `order`) into one Batch.
std::shared_ptr<Batch> gather(const Dataset& dataset, const EpochOrder& order, int64_t step,
                                    int64_t global_batch, int replicas) {
    const int64_t begin = step * global_batch;
    const int64_t end = std::min<int64_t>(begin + global_batch, order.size());
    auto batch = gather_rows(dataset, order, begin, end - begin);
    batch->step = step;
    batch->size = end - begin;
    batch->shard_begin = shard_offsets(batch->size, replicas);
    return batch;
}

}  // namespace

std::vector<int64_t> shard_offsets(int64_t batch_size, int replicas) {
    std::vector<int64_t> offsets(static_cast<size_t>(replicas) + 1, 0);
    const int64_t base = batch_size / replicas;
    const int64_t extra = batch_size % replicas;
    for (int r = 0; r < replicas; ++r) offsets[r + 1] = offsets[r] + base + (r < extra ? 1 : 0);
    return offsets;
}

namespace {
uint64_t mix64(uint64_t z) {  // splitmix64's finalizer
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
}  // namespace

EpochOrder::EpochOrder(int64_t n, bool shuffle, uint64_t seed, int64_t epoch, int64_t materialized_limit)
    : n_(std::max<int64_t>(n, 0)) {
    if (!shuffle || n_ <= 1) return;
    // A stream per epoch derived from the seed alone: a resumed run reproduces the
    // order of any epoch without replaying the ones before it.
    Rng rng = Rng(seed).split(static_cast<uint64_t>(epoch));
    if (n_ <= materialized_limit) {
        held_.resize(static_cast<size_t>(n_));
        for (int64_t i = 0; i < n_; ++i) held_[static_cast<size_t>(i)] = i;
        for (int64_t i = n_ - 1; i > 0; --i) {
            const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i + 1)));
            std::swap(held_[static_cast<size_t>(i)], held_[static_cast<size_t>(j)]);
        }
        return;
    }
    feistel_ = true;
    int bits = 1;
    while (bits < 64 && (uint64_t{1} << bits) < static_cast<uint64_t>(n_)) ++bits;
    bits += bits & 1;  // two equal halves
    half_bits_ = bits / 2;
    half_mask_ = (uint64_t{1} << half_bits_) - 1;  // half_bits_ <= 32
    for (uint64_t& k : keys_) k = rng.next_u64();
}

// Six rounds of a balanced Feistel network on 2 * half_bits_ bits; the round
// function hashes the right half with the round's key.
uint64_t EpochOrder::permute(uint64_t x) const {
    uint64_t left = x >> half_bits_, right = x & half_mask_;
    for (const uint64_t key : keys_) {
        const uint64_t next = left ^ (mix64(right ^ key) & half_mask_);
        left = right;
        right = next;
    }
    return (left << half_bits_) | right;
}

std::vector<int64_t> epoch_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch) {
    const EpochOrder order(n, shuffle, seed, epoch);
    std::vector<int64_t> out(static_cast<size_t>(order.size()));
    for (int64_t i = 0; i < order.size(); ++i) out[static_cast<size_t>(i)] = order[i];
    return out;
}

Loader::Loader(const Dataset& dataset, int64_t global_batch, int replicas, bool shuffle, uint64_t seed,
               int prefetch_depth, int consumers, int workers)
    : dataset_(dataset),
      global_batch_(global_batch),
      replicas_(replicas),
      consumers_(consumers > 0 ? consumers : replicas),
      shuffle_(shuffle),
      seed_(seed),
      prefetch_depth_(std::max(1, prefetch_depth)),
      workers_(std::max(1, workers)) {
    if (global_batch < 1) throw ConfigError("training.batch_size must be at least 1, got " + std::to_string(global_batch));
    if (replicas < 1) throw ConfigError("the data loader needs at least 1 replica, got " + std::to_string(replicas));
    const DatasetPart& part = dataset.part;
    if (part.count > 1) {
        if (replicas % part.count != 0)
            throw Error("Loader: " + std::to_string(replicas) + " replicas cannot be split evenly over " +
                        std::to_string(part.count) + " workers");
        // Worker w's replicas are global ranks [w*R, (w+1)*R); its rows of a global batch are theirs.
        const int per_worker = replicas / part.count;
        const std::vector<int64_t> offsets = shard_offsets(global_batch, replicas);
        part_ = true;
        part_steps_ = INT64_MAX;
        for (int w = 0; w < part.count; ++w) {
            const int64_t rows = offsets[(w + 1) * per_worker] - offsets[w * per_worker];
            const int64_t samples = part.whole * (w + 1) / part.count - part.whole * w / part.count;
            if (rows > 0) part_steps_ = std::min(part_steps_, samples / rows);
            if (w == part.index) {
                part_rows_ = rows;
                part_first_row_ = offsets[w * per_worker];
            }
        }
        if (part_steps_ == 0) {
            throw ConfigError("data.shard_files: each of the " + std::to_string(part.count) + " workers holds about " +
                              std::to_string(part.whole / part.count) + " training samples, fewer than its share of " +
                              "one global batch of " + std::to_string(global_batch) +
                              " (training.batch_size); lower the batch size or use more data");
        }
        if (dataset.size() != part.whole * (part.index + 1) / part.count - part.whole * part.index / part.count)
            throw Error("Loader: the dataset does not hold its part of the training set");
    }
}

Loader::~Loader() { stop_producer(); }

void Loader::set_index_only(bool index_only) {
    if (index_only && part_) throw Error("Loader: a worker's part of the training set is gathered by the loader");
    stop_producer();
    std::lock_guard lock(mutex_);
    index_only_ = index_only;
    started_ = false;
}

int64_t Loader::steps_per_epoch() const {
    const int64_t all = part_ ? part_steps_ : (dataset_.size() + global_batch_ - 1) / global_batch_;
    return max_steps_ > 0 ? std::min(all, max_steps_) : all;
}

void Loader::start_epoch(int64_t epoch, int64_t first_step) {
    const int64_t steps = steps_per_epoch();
    if (first_step < 0 || first_step > steps) {
        throw Error("Loader::start_epoch: first step " + std::to_string(first_step) + " is outside epoch " +
                    std::to_string(epoch) + " (" + std::to_string(steps) + " steps)");
    }
    stop_producer();
    {
        std::lock_guard lock(mutex_);
        if (index_only_) {  // get() makes each batch itself
            started_ = true;
            epoch_ = epoch;
            first_step_ = first_step;
            return;
        }
        ready_.clear();
        released_below_ = first_step;
        stopping_ = false;
        started_ = true;
        epoch_ = epoch;
        first_step_ = first_step;
    }
    // One order for all the workers, made once.
    auto order = std::make_shared<const EpochOrder>(dataset_.size(), shuffle_, seed_, epoch);
    for (int w = 0; w < workers_; ++w) producers_.emplace_back(&Loader::produce, this, epoch, first_step, w, order);
}

std::shared_ptr<const Batch> Loader::get(int64_t step) {
    std::unique_lock lock(mutex_);
    const int64_t steps = steps_per_epoch();
    if (!started_) throw Error("Loader::get: no epoch started (call start_epoch first)");
    if (step < first_step_ || step >= steps) {
        throw Error("Loader::get: step " + std::to_string(step) + " is outside epoch " + std::to_string(epoch_) +
                    " (steps " + std::to_string(first_step_) + ".." + std::to_string(steps - 1) + ")");
    }
    if (index_only_) {
        lock.unlock();
        auto batch = std::make_shared<Batch>();
        batch->step = step;
        batch->epoch = epoch_;
        batch->type = dataset_.type;
        batch->size = std::min(global_batch_, dataset_.size() - step * global_batch_);
        batch->shard_begin = shard_offsets(batch->size, replicas_);
        return batch;
    }
    if (step < released_below_) {
        throw Error("Loader::get: step " + std::to_string(step) + " was already taken by all " +
                    std::to_string(consumers_) + " replicas");
    }
    changed_.wait(lock, [&] { return stopping_ || ready_.count(step) > 0; });
    if (stopping_) throw Error("Loader::get: the loader was stopped while waiting for step " + std::to_string(step));

    Slot& slot = ready_[step];
    if (slot.taken >= consumers_) {
        throw Error("Loader::get: step " + std::to_string(step) + " requested more than " +
                    std::to_string(consumers_) + " times");
    }
    std::shared_ptr<const Batch> batch = slot.batch;
    ++slot.taken;
    // Release from the front: consumers take steps in order, so a step is fully
    // taken only after every earlier one, but a straggler must not be skipped.
    bool released = false;
    while (!ready_.empty() && ready_.begin()->first == released_below_ && ready_.begin()->second.taken == consumers_) {
        ready_.erase(ready_.begin());
        ++released_below_;
        released = true;
    }
    lock.unlock();
    if (released) changed_.notify_all();
    return batch;
}

void Loader::produce(int64_t epoch, int64_t first_step, int worker, std::shared_ptr<const EpochOrder> epoch_rows) {
    const EpochOrder& order = *epoch_rows;
    const int64_t steps = steps_per_epoch();
    // Worker w gathers steps first_step + w, + workers, ...; each waits for its
    // step to come within the prefetch depth (at least one step per worker).
    const int64_t depth = std::max<int64_t>(prefetch_depth_, workers_);
    for (int64_t step = first_step + worker; step < steps; step += workers_) {
        {
            std::unique_lock lock(mutex_);
            changed_.wait(lock, [&] { return stopping_ || step < released_below_ + depth; });
            if (stopping_) return;
        }
        // Gather outside the lock so that consumers can take earlier batches meanwhile.
        std::shared_ptr<Batch> batch;
        if (part_) {
            const int64_t first_id = part_of(dataset_.part.whole, dataset_.part.index, dataset_.part.count).begin;
            auto rows = gather_rows(dataset_, order, step * part_rows_, part_rows_, first_id);
            rows->step = step;
            rows->size = global_batch_;  // every step of a sharded epoch is a full global batch
            rows->shard_begin = shard_offsets(global_batch_, replicas_);
            rows->first_row = part_first_row_;
            batch = std::move(rows);
        } else {
            batch = gather(dataset_, order, step, global_batch_, replicas_);
        }
        batch->epoch = epoch;
        {
            std::lock_guard lock(mutex_);
            if (stopping_) return;
            ready_[step] = Slot{std::move(batch), 0};
        }
        changed_.notify_all();
    }
}

void Loader::stop_producer() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : producers_)
        if (t.joinable()) t.join();
    producers_.clear();
}

}  // namespace gputrain::data
