// TensorBoardWriter: TensorBoard scalars of a run (logging.tensorboard: true),
// in two folders that TensorBoard shows as two runs:
//  - RUN_DIR/tensorboard/, per epoch, step = the 1-based epoch number as in
//    metrics.csv: loss, accuracy (or mae/mse), val_loss, val_accuracy, learning_rate,
//    samples_per_second;
//  - RUN_DIR/tensorboard/steps/, every logging.every_steps steps, step = the
//    global step (steps done): batch/loss and batch/accuracy (the epoch's
//    running averages so far), batch/learning_rate, batch/samples_per_second
//    (since the previous report).
// Each run (fresh or resumed) adds a new events.out.tfevents.<seconds>.<host>.<pid>
// file to each folder, named to sort after the files already there, starting
// with a SessionLog START at the first step it will write: TensorBoard then
// drops whatever an earlier run wrote from that step on (past the checkpoint
// this run resumed from). Epoch and step numbers differ, so each needs its own
// folder for that to drop the right events.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "train/metrics_file.hpp"

namespace gputrain::train {

// One batch-level report.
struct StepRecord {
    int64_t step = 0;  // global steps done
    double loss = 0, metric = 0, learning_rate = 0, samples_per_second = 0;
};

class TensorBoardWriter {
public:
    // Empty `dir` = disabled. Creates the folders and files; Error naming them
    // when it cannot. The run starts after `epochs_done` epochs, `steps_done` global steps.
    // `metric`: the tag of the metric beside the loss (RunConfig::metric).
    // `bits`: a language model's bits per token tag (bpc, bpb, bpt): ppl and
    // BITS (with validation val_ppl and val_BITS) are written too.
    TensorBoardWriter(const std::string& dir, int64_t epochs_done, int64_t steps_done,
                      const std::string& metric = "accuracy", const std::string& bits = "");

    bool enabled() const { return epochs_.file != nullptr; }
    // loss, accuracy, val_loss and val_accuracy (with validation), learning_rate,
    // samples_per_second; flushed, so TensorBoard sees each epoch as it ends.
    void write(const EpochRecord& record);
    // The batch/* scalars of one report; flushed.
    void write(const StepRecord& record);
    const std::string& epochs_path() const { return epochs_.path; }
    const std::string& steps_path() const { return steps_.path; }

private:
    struct EventFile {
        std::string path;
        std::unique_ptr<std::FILE, int (*)(std::FILE*)> file{nullptr, &std::fclose};
        // Creates `dir` and a new event file in it whose events replace those
        // of earlier files from `first_step` on.
        void open(const std::string& dir, int64_t first_step);
        void append(const std::string& event);
    };

    std::string metric_;
    std::string bits_;
    EventFile epochs_, steps_;
};

}  // namespace gputrain::train
