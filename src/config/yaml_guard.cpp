#include "config/yaml_guard.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include <yaml-cpp/yaml.h>

#include "core/error.hpp"

namespace gputrain::config {

void check_yaml_terminates(const std::string& yaml, const std::string& source_name, double seconds) {
    const pid_t child = ::fork();
    if (child < 0) return;  // cannot tell; parse in this process as before
    if (child == 0) {
        // The child only needs to finish: errors are reported by the real parse.
        try {
            (void)YAML::LoadAll(yaml);
        } catch (...) {
        }
        ::_exit(0);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    auto pause = std::chrono::microseconds(50);
    for (;;) {
        int status = 0;
        const pid_t done = ::waitpid(child, &status, WNOHANG);
        if (done == child || (done < 0 && errno != EINTR)) return;
        if (std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    throw ConfigError(source_name + ": the YAML parser (yaml-cpp) did not finish within " +
                      std::to_string(static_cast<int>(seconds)) +
                      " s on this text, a known yaml-cpp bug with malformed flow collections; check that every "
                      "'{' and '[' is closed on its own line and that no line starts with ','");
}

}  // namespace gputrain::config
