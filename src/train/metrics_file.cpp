#include "train/metrics_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.hpp"

namespace gputrain::train {

namespace {
constexpr const char* kHeader =
    "epoch,loss,accuracy,val_loss,val_accuracy,learning_rate,seconds,samples_per_second\n";
}

MetricsFile::MetricsFile(const std::string& path, bool append, int64_t epochs_done) : path_(path) {
    if (path_.empty()) return;
    if (append && std::filesystem::exists(path_)) {
        keep_epochs_through(epochs_done);
        return;
    }
    std::FILE* f = std::fopen(path_.c_str(), "w");
    if (!f) throw Error("cannot write metrics file '" + path_ + "': " + std::strerror(errno));
    std::fputs(kHeader, f);
    close_or_throw(f, "cannot write metrics file");
}

// A full disk shows when the buffered line is flushed, at the latest at fclose.
void MetricsFile::close_or_throw(std::FILE* f, const char* what) const {
    const bool failed = std::ferror(f) != 0;
    const int error = errno;
    if (std::fclose(f) != 0 || failed)
        throw Error(std::string(what) + " '" + path_ + "': " + std::strerror(failed ? error : errno));
}

void MetricsFile::keep_epochs_through(int64_t epochs_done) {
    std::ifstream in(path_);
    std::vector<std::string> kept;
    std::string line;
    bool dropped = false;
    while (std::getline(in, line)) {
        const bool header = kept.empty();
        // Rows start with the 1-based epoch; a torn last line (crash mid-write) has no newline and is dropped too.
        if (!header && (in.eof() || std::strtoll(line.c_str(), nullptr, 10) > epochs_done)) {
            dropped = true;
            continue;
        }
        kept.push_back(line);
    }
    if (!dropped) return;
    const std::string temp = path_ + ".tmp";
    {
        std::ofstream out(temp, std::ios::trunc);
        for (const auto& l : kept) out << l << '\n';
        out.close();
        if (!out) throw Error("cannot rewrite metrics file '" + path_ + "': " + std::strerror(errno));
    }
    std::filesystem::rename(temp, path_);
}

void MetricsFile::write(const EpochRecord& r) {
    if (path_.empty()) return;
    std::FILE* f = std::fopen(path_.c_str(), "a");
    if (!f) throw Error("cannot append to metrics file '" + path_ + "': " + std::strerror(errno));
    if (r.has_validation)
        std::fprintf(f, "%lld,%.6f,%.6f,%.6f,%.6f,%.8g,%.3f,%.1f\n", (long long)r.epoch, r.loss, r.accuracy, r.val_loss,
                     r.val_accuracy, r.learning_rate, r.seconds, r.samples_per_second);
    else
        std::fprintf(f, "%lld,%.6f,%.6f,,,%.8g,%.3f,%.1f\n", (long long)r.epoch, r.loss, r.accuracy, r.learning_rate,
                     r.seconds, r.samples_per_second);
    close_or_throw(f, "cannot append to metrics file");
}

}  // namespace gputrain::train
