#include "train/metrics_file.hpp"

#include <cmath>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.hpp"

namespace gputrain::train {

MetricsFile::MetricsFile(const std::string& path, bool append, int64_t epochs_done, const std::string& metric,
                         const std::string& bits)
    : language_(!bits.empty()),
      path_(path),
      header_("epoch,loss," + metric + ",val_loss,val_" + metric + ",learning_rate,seconds,samples_per_second" +
              (bits.empty() ? std::string() : ",ppl,val_ppl," + bits + ",val_" + bits)) {
    if (path_.empty()) return;
    std::error_code ec;
    if (append && std::filesystem::exists(path_, ec)) {
        // A device or pipe (/dev/stdout) is written as it is, never read or moved.
        if (std::filesystem::is_regular_file(path_, ec)) keep_epochs_through(epochs_done);
        return;
    }
    if (std::filesystem::is_regular_file(path_, ec)) {  // not a device such as /dev/full, which never ends
        std::ifstream earlier(path_);
        std::string line;
        for (bool header = true; std::getline(earlier, line); header = false)
            if (!header && !line.empty()) ++replaced_rows_;
    }
    std::FILE* f = std::fopen(path_.c_str(), "w");
    if (!f) throw Error("cannot write metrics file '" + path_ + "': " + std::strerror(errno));
    std::fprintf(f, "%s\n", header_.c_str());
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
    // A file without this header (emptied, another program's, edited) is not
    // one to append to: kept aside, and a new one started.
    if (!std::getline(in, line) || line != header_) {
        const std::string aside = path_ + ".unreadable";
        std::error_code ec;
        std::filesystem::rename(path_, aside, ec);
        if (ec) throw Error("metrics file '" + path_ + "' does not start with gputrain's header and cannot be moved "
                            "aside: " + ec.message() + "; move or delete it");
        warning_ = "metrics file '" + path_ + "' does not start with gputrain's header (" +
                   (line.empty() ? std::string("it is empty") : "it starts '" + line.substr(0, 60) + "'") +
                   "): kept as " + aside + ", and a new one started with this run's epochs";
        std::FILE* f = std::fopen(path_.c_str(), "w");
        if (!f) throw Error("cannot write metrics file '" + path_ + "': " + std::strerror(errno));
        std::fprintf(f, "%s\n", header_.c_str());
        close_or_throw(f, "cannot write metrics file");
        return;
    }
    kept.push_back(line);
    int64_t torn_epoch = 0;
    while (std::getline(in, line)) {
        const int64_t epoch = std::strtoll(line.c_str(), nullptr, 10);
        // Rows start with the 1-based epoch; a torn last line (crash mid-write)
        // has no newline and is dropped too.
        if (in.eof() && epoch <= epochs_done) torn_epoch = epoch;
        if (in.eof() || epoch > epochs_done) {
            dropped = true;
            continue;
        }
        kept.push_back(line);
    }
    if (torn_epoch > 0)
        warning_ = "metrics file '" + path_ + "': the row of epoch " + std::to_string(torn_epoch) +
                   " was cut short (no line end; a write stopped by a crash or an edit), so it is dropped; that "
                   "epoch's loss and metric are in its checkpoint's metadata";
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
        std::fprintf(f, "%lld,%.6f,%.6f,%.6f,%.6f,%.8g,%.3f,%.1f", (long long)r.epoch, r.loss, r.metric, r.val_loss,
                     r.val_metric, r.learning_rate, r.seconds, r.samples_per_second);
    else
        std::fprintf(f, "%lld,%.6f,%.6f,,,%.8g,%.3f,%.1f", (long long)r.epoch, r.loss, r.metric, r.learning_rate,
                     r.seconds, r.samples_per_second);
    if (language_) {
        const double bits = 1.0 / std::log(2.0);
        if (r.has_validation)
            std::fprintf(f, ",%.6f,%.6f,%.6f,%.6f", std::exp(r.loss), std::exp(r.val_loss), r.loss * bits,
                         r.val_loss * bits);
        else
            std::fprintf(f, ",%.6f,,%.6f,", std::exp(r.loss), r.loss * bits);
    }
    std::fputc('\n', f);
    close_or_throw(f, "cannot append to metrics file");
}

}  // namespace gputrain::train
