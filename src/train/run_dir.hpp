// The run dir of a fit, as a fit leaves it and finds it: an earlier run's
// files (refused by a fresh fit, deleted by --overwrite), the resolved
// config.yaml (a resume whose config changed keeps the earlier one as
// config.previous-N.yaml), and a run dir that a failed fit created and removes
// again. cli/fit.cpp decides when each happens; these do it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace gputrain::train {

// What an earlier run left in the run dir: its checkpoints (run_checkpoints:
// last, best, epoch-NNN in checkpoint.dir) and, only when there are any, its
// TensorBoard events (checkpoint.dir/tensorboard/ and tensorboard/steps/,
// which TensorBoard would show as part of the new run) and the configs a
// resume kept (run_dir/config.previous-N.yaml). Listed before the new run
// writes its own.
struct EarlierRun {
    std::vector<std::string> checkpoints;
    std::vector<std::string> logs;
    bool empty() const { return checkpoints.empty(); }
};

EarlierRun find_earlier_run(const config::RunConfig& cfg);

// A fresh run into a folder that holds another run's checkpoints would
// overwrite them (and keep_last would prune the two runs' epochs together):
// ConfigError naming up to three of them, unless `earlier` is empty.
void refuse_earlier_run(const EarlierRun& earlier, const config::RunConfig& cfg);

// --overwrite: deletes every file of `earlier` and says so (one info line).
// Error when a checkpoint cannot be deleted; a log that cannot is left.
// Nothing when `earlier` is empty (then the logs are not the earlier run's).
void clear_earlier_run(const EarlierRun& earlier, const config::RunConfig& cfg);

// DIR/config.previous-N.yaml with the smallest N >= 1 that is not taken.
std::filesystem::path free_previous_config(const std::filesystem::path& dir);

// A resumed run whose config differs from the run dir's config.yaml at `path`
// (other than in training.epochs or early stopping, which a resume is for, or
// in spelling the same run dir) renames that file to free_previous_config()
// and warns with what changed (or that it was not a readable config).
// Returns whether it did; false also when `path` cannot be read.
bool keep_previous_config(const std::filesystem::path& path, const config::RunConfig& cfg);

// Writes run_dir/config.yaml: the resolved config under a comment naming its
// source. When `resuming`, keep_previous_config() first. Returns whether a
// resume's config change was reported. Error when it cannot be written.
bool write_resolved_config(const config::RunConfig& cfg, bool resuming);

// A run dir that a fit creates. When the run fails before it writes anything
// (a resume whose checkpoint does not load), the destructor removes it again:
// the lock file named `lock_file` inside it, then the folder itself, only when
// empty (nothing else is ever removed). Declare it before the locks on the
// folder, so that it goes after them.
class NewRunDir {
public:
    explicit NewRunDir(std::string lock_file) : lock_file_(std::move(lock_file)) {}
    ~NewRunDir();
    NewRunDir(const NewRunDir&) = delete;
    NewRunDir& operator=(const NewRunDir&) = delete;

    // Creates `dir` with its parents, remembering it when it did not exist.
    // Error ("cannot create run dir ...") when it cannot be created.
    void create(const std::string& dir);
    // The run writes into the folder from now on: it stays.
    void keep() { kept_ = true; }

private:
    std::string lock_file_;
    std::filesystem::path dir_;  // empty: it existed before (or create() was not called)
    bool kept_ = false;
};

}  // namespace gputrain::train
