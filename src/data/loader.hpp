// Loader: the GLOBAL order of an epoch (a permutation seeded by (seed, epoch),
// so a resumed run sees the same order), cut into global batches, each split
// into per-replica shards, gathered ahead of time on background threads.
//
// A Dataset that is one worker's part of the training set (data.shard_files,
// DatasetPart count > 1) is loaded differently: each worker permutes its own
// part (seeded by (seed, epoch)) and contributes its replicas' rows of every
// global batch from it; Batch then holds only those rows. Every step is a full
// global batch: an epoch has the steps the smallest part can fill, and the
// samples a part has beyond that are not used in that epoch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "data/dataset.hpp"

namespace gputrain::data {

struct Batch {
    int64_t step = 0;                    // index of the batch within its epoch
    int64_t epoch = 0;
    int64_t size = 0;                    // samples in this global batch (last may be smaller)
    // The rows, typed as the data set stores them: floats (f32) in `inputs`,
    // or the bytes of u8 pixels or token ids in `stored` (row_bytes a row).
    SampleType type = SampleType::f32;
    std::vector<float> inputs;           // f32: size * sample_elements
    std::vector<uint8_t> stored;         // u8, token: size * row_bytes
    size_t row_bytes = 0;                // Dataset::row_bytes
    // size * label_width (Dataset::labels); empty for token windows, whose
    // labels are their rows' ids one further on (made with the inputs).
    std::vector<int32_t> labels;
    int label_width = 1;
    std::vector<int32_t> ids;            // size: each row's index in the data set (augmentation's key)
    std::vector<int64_t> shard_begin;    // replicas + 1 offsets: replica r owns rows [shard_begin[r], shard_begin[r+1])
    // inputs/labels hold the global batch's rows [first_row, first_row + labels.size()): all of
    // them (first_row 0), or with data.shard_files only this worker's replicas' rows.
    int64_t first_row = 0;

    // The storage of row i of this Batch (floats, bytes or ids).
    const void* row(int64_t i) const {
        return type == SampleType::f32 ? static_cast<const void*>(reinterpret_cast<const char*>(inputs.data()) + i * row_bytes)
                                       : static_cast<const void*>(stored.data() + i * row_bytes);
    }
};

// Shard boundaries of `batch_size` rows over `replicas`: as even as possible,
// the first (batch_size % replicas) replicas get one row more. A replica may get 0 rows.
std::vector<int64_t> shard_offsets(int64_t batch_size, int replicas);

// The order of an epoch: a permutation of [0, n) seeded by (seed, epoch), the
// identity when shuffle is false. Up to `materialized_limit` samples it is a
// Fisher-Yates shuffle held as a vector (8 bytes a sample); above, a keyed
// Feistel network on the smallest even power of two >= n, cycle-walked into
// [0, n) (Black and Rogaway's cipher on an arbitrary domain), computed when
// asked: no memory however many samples (a text's windows at
// data.sequence_stride 1 can be billions). Loaders share one through a
// shared_ptr (a copy copies the list).
class EpochOrder {
public:
    static constexpr int64_t kMaterializedLimit = int64_t{1} << 24;  // 16.8 M samples, 128 MiB

    EpochOrder(int64_t n, bool shuffle, uint64_t seed, int64_t epoch,
               int64_t materialized_limit = kMaterializedLimit);

    int64_t size() const { return n_; }
    // The sample at place i of the epoch, 0 <= i < size().
    int64_t operator[](int64_t i) const {
        if (!held_.empty()) return held_[static_cast<size_t>(i)];
        if (!feistel_) return i;
        uint64_t x = permute(static_cast<uint64_t>(i));
        while (x >= static_cast<uint64_t>(n_)) x = permute(x);  // under 4 times on average: the domain is < 4n
        return static_cast<int64_t>(x);
    }
    bool computed() const { return feistel_; }  // the Feistel network, not a held vector

private:
    uint64_t permute(uint64_t x) const;

    int64_t n_ = 0;
    std::vector<int64_t> held_;
    bool feistel_ = false;
    int half_bits_ = 0;
    uint64_t half_mask_ = 0;
    uint64_t keys_[6] = {};
};

// EpochOrder's places 0..n-1 as a vector (tests, and the replicas that upload
// an epoch's order).
std::vector<int64_t> epoch_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch);

class Loader {
public:
    // `dataset` must outlive the loader. prefetch_depth = batches gathered ahead.
    // `replicas` is the number of shards of a batch (all replicas of all
    // workers); `consumers` the replicas of this process that call get() per
    // step (0 = replicas: a single-process run).
    // `workers` threads gather batches ahead (data.workers), each every
    // workers-th step; the batches are the same whatever their number.
    Loader(const Dataset& dataset, int64_t global_batch, int replicas, bool shuffle, uint64_t seed,
           int prefetch_depth = 4, int consumers = 0, int workers = 1);
    ~Loader();
    Loader(const Loader&) = delete;
    Loader& operator=(const Loader&) = delete;

    // For consumers that copy their rows from the data set themselves, by the
    // epoch order (train::Replica with the training set resident): batches
    // then carry no rows (inputs and labels empty), get() makes them at once
    // and no thread gathers ahead. Set before start_epoch. Not for a worker's part.
    void set_index_only(bool index_only);

    // ceil(size / global_batch); for a worker's part: min over the parts of floor(part / its rows of a batch);
    // at most set_max_steps' limit.
    int64_t steps_per_epoch() const;
    // training.steps_per_epoch: an epoch is the first `steps` batches of its
    // order (0: all of them). Set before start_epoch.
    void set_max_steps(int64_t steps) { max_steps_ = steps; }

    // Starts gathering `epoch`'s batches from `first_step` on (resume mid-epoch). Call from one
    // thread, when no replica is inside get() (between epochs). Stops any previous epoch's prefetch.
    void start_epoch(int64_t epoch, int64_t first_step = 0);

    // The batch for `step` of the current epoch; blocks until gathered. Every one of the
    // `consumers` calls get(step) once per step; a batch is released when all have.
    // Thread-safe. Throws Error if step is outside the epoch.
    std::shared_ptr<const Batch> get(int64_t step);

private:
    void produce(int64_t epoch, int64_t first_step, int worker, std::shared_ptr<const EpochOrder> order);
    void stop_producer();

    const Dataset& dataset_;
    int64_t global_batch_;
    int replicas_;
    int consumers_;
    bool shuffle_;
    uint64_t seed_;
    int prefetch_depth_;
    int workers_;
    // For a worker's part (data.shard_files): its rows of each global batch and the epoch's steps.
    bool part_ = false;
    bool index_only_ = false;
    int64_t part_rows_ = 0, part_first_row_ = 0, part_steps_ = 0;
    int64_t max_steps_ = 0;

    std::mutex mutex_;
    std::condition_variable changed_;
    struct Slot {
        std::shared_ptr<const Batch> batch;
        int taken = 0;
    };
    std::map<int64_t, Slot> ready_;      // step -> gathered batch
    int64_t released_below_ = 0;         // every step below this has been taken by all replicas
    bool stopping_ = false;
    bool started_ = false;               // start_epoch has been called
    int64_t epoch_ = 0;                  // the current epoch and its first step (for get's checks)
    int64_t first_step_ = 0;
    std::vector<std::thread> producers_;
};

}  // namespace gputrain::data
