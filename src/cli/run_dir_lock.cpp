#include "cli/run_dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace gputrain::cli {

RunDirLock::RunDirLock(const std::string& dir, const std::string& setting) {
    const std::string path = (std::filesystem::path(dir) / file_name).string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("cannot create '" + path + "': " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        ::close(fd_);
        if (error == EWOULDBLOCK)
            throw Error("'" + dir + "' is in use by another gputrain fit (it holds " + path +
                        "); wait for that run to end or give another " + setting);
        throw Error("cannot lock '" + path + "': " + std::strerror(error));
    }
}

RunDirLock::~RunDirLock() { ::close(fd_); }

}  // namespace gputrain::cli
