// TensorBoardWriter: RUN_DIR/tensorboard/events.out.tfevents.<seconds>.<host>,
// the per-epoch metrics as TensorBoard scalars (logging.tensorboard: true). The
// step of an epoch's scalars is its 1-based number, as in metrics.csv; a resumed
// run adds a new file to the folder, which TensorBoard reads as one run.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "train/metrics_file.hpp"

namespace gputrain::train {

class TensorBoardWriter {
public:
    // Empty `dir` = disabled. Creates the folder and the file; Error naming it when it cannot.
    explicit TensorBoardWriter(const std::string& dir);

    // loss, accuracy, val_loss and val_accuracy (with validation), learning_rate,
    // samples_per_second; flushed, so TensorBoard sees each epoch as it ends.
    void write(const EpochRecord& record);
    const std::string& path() const { return path_; }

private:
    void append(const std::string& event);

    std::string path_;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, &std::fclose};
};

}  // namespace gputrain::train
