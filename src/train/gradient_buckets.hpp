// GradientBuckets: one replica's gradient all-reduce, cut into buckets of
// whole layers of at least `bucket_mb` MiB, each started (asynchronously) as
// soon as backward has written its gradients, so that communication overlaps
// the rest of backward. Layers run last to first and the flat gradient buffer
// is in layer order, so a bucket is a range [begin, end) and the buckets are
// started from the end of the buffer towards its start. The plan depends only
// on the model and bucket_mb, so every rank starts the same buckets in the
// same order (NCCL's rule), whatever its shard holds.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "dist/communicator.hpp"
#include "nn/model.hpp"

namespace gputrain::train {

struct GradientRange {
    size_t begin = 0, end = 0;  // floats of the flat gradient buffer
    bool operator==(const GradientRange&) const = default;
};

// Buckets in start order: walking the layers from the last, a bucket closes
// once it holds >= bucket_mb MiB; what is left at the first layer is the last
// bucket. Layers without parameters add nothing. bucket_mb 0: one range, all.
// `layer_offsets` is Model::layer_param_offsets().
std::vector<GradientRange> plan_gradient_buckets(const std::vector<size_t>& layer_offsets, double bucket_mb);

class GradientBuckets {
public:
    // bucket_mb 0 (or a single replica): no overlap, finish() makes the one
    // all-reduce of the whole buffer, exactly as before buckets existed.
    GradientBuckets(const nn::Model& model, double bucket_mb, dist::Communicator& comm, float* grads);
    GradientBuckets(const GradientBuckets&) = delete;  // on_ready() refers to this object
    GradientBuckets& operator=(const GradientBuckets&) = delete;

    // For Model::forward_backward: starts each bucket when its layers are done
    // (null when not overlapping).
    const nn::GradientsReady& on_ready() const { return on_ready_; }
    // After backward: waits for every bucket (or runs the single all-reduce).
    // Then the whole buffer holds the sum over replicas. Returns whether every
    // sum is finite when the communicator checked that while summing every
    // bucket, else std::nullopt (then look with Backend::all_finite).
    std::optional<bool> finish();

    const std::vector<GradientRange>& plan() const { return plan_; }

private:
    void ready(size_t offset);

    std::vector<GradientRange> plan_;
    dist::Communicator& comm_;
    float* grads_;
    size_t total_;
    bool overlapping_;
    size_t next_ = 0;  // the next bucket of plan_ to start
    std::vector<dist::PendingAllreduce> pending_;
    nn::GradientsReady on_ready_;
};

}  // namespace gputrain::train
