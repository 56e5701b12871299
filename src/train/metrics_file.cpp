#include "train/metrics_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace gputrain::train {

namespace {
constexpr const char* kHeader =
    "epoch,loss,accuracy,val_loss,val_accuracy,learning_rate,seconds,samples_per_second\n";
}

MetricsFile::MetricsFile(const std::string& path, bool append) : path_(path) {
    if (path_.empty()) return;
    if (append && std::filesystem::exists(path_)) return;
    std::FILE* f = std::fopen(path_.c_str(), "w");
    if (!f) throw Error("cannot write metrics file '" + path_ + "': " + std::strerror(errno));
    std::fputs(kHeader, f);
    std::fclose(f);
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
    std::fclose(f);
}

}  // namespace gputrain::train
