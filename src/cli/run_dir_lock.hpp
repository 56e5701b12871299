// RunDirLock: an exclusive flock on DIR/.gputrain.lock while a fit trains in
// DIR. Two runs in one folder would interleave metrics.csv and overwrite each
// other's checkpoints; the second one stops at once instead. The lock goes
// with the process, however it ends.
#pragma once

#include <string>

namespace gputrain::cli {

class RunDirLock {
public:
    // The lock file's name inside DIR.
    static constexpr const char* file_name = ".gputrain.lock";
    // Throws Error naming the lock file when another process holds it, with
    // `setting` ("--run-dir", "checkpoint.dir") as what to change instead.
    RunDirLock(const std::string& dir, const std::string& setting);
    ~RunDirLock();
    RunDirLock(const RunDirLock&) = delete;
    RunDirLock& operator=(const RunDirLock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace gputrain::cli
