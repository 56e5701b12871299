// Callback: a rule that runs between epochs, as Keras' callbacks do
// (early_stopping, reduce_lr_on_plateau). Each owns its state and its keys in
// a checkpoint's metadata, and the trainer treats them alike: restore() on
// --resume, after_epoch() once an epoch's record (validation included) is
// known, save() into every checkpoint written after that.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "train/checkpoint_metadata.hpp"
#include "train/metrics_file.hpp"

namespace gputrain::train {

// What the epoch's callbacks decided, gathered over all of them.
struct EpochDecision {
    bool stop = false;                    // training ends after this epoch
    std::optional<double> learning_rate;  // the base rate from the next epoch on
    std::vector<std::string> notes;       // info lines ("reduce_lr_on_plateau: ...")
};

class Callback {
public:
    virtual ~Callback() = default;
    // --resume: its state from the checkpoint's metadata (DataError naming the
    // file when its keys cannot be right). A state this run's settings cannot
    // continue starts over or is dropped; returns the info lines that say so.
    virtual std::vector<std::string> restore(const MetadataReader& metadata) = 0;
    // Epoch `record.epoch` has ended: updates its state, adds to `decision`.
    virtual void after_epoch(const EpochRecord& record, EpochDecision& decision) = 0;
    // Its state, into a checkpoint's metadata (nothing when it has none).
    virtual void save(Metadata& metadata) const = 0;
};

}  // namespace gputrain::train
