// MetricsFile: RUN_DIR/metrics.csv, one row appended (and flushed) per epoch:
// epoch,loss,accuracy,val_loss,val_accuracy,learning_rate,seconds,samples_per_second
// (mae or mse in place of accuracy with real-valued targets: RunConfig::metric).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace gputrain::train {

struct EpochRecord {
    int64_t epoch = 0;  // 1-based, as printed
    double loss = 0, metric = 0;  // metric: RunConfig::metric (accuracy, mae or mse)
    bool has_validation = false;
    double val_loss = 0, val_metric = 0;
    double learning_rate = 0;
    double seconds = 0;
    double samples_per_second = 0;
};

class MetricsFile {
public:
    // Empty path = no file. A fresh run starts the file anew. A run that
    // resumes after `epochs_done` epochs appends, first dropping rows of later
    // epochs (written before a crash that lost their checkpoint) and a torn
    // last row; a file without gputrain's header is moved to PATH.unreadable
    // and started anew (warning() says so).
    // `metric` names the second and fifth columns (RunConfig::metric).
    // `bits`: a language model's bits per token column ("bpc", "bpb", "bpt"):
    // four columns more, ppl, val_ppl, BITS, val_BITS (exp and / ln 2 of the losses).
    MetricsFile(const std::string& path, bool append, int64_t epochs_done = 0,
                const std::string& metric = "accuracy", const std::string& bits = "");
    void write(const EpochRecord& record);
    const std::string& path() const { return path_; }
    // What the resume found wrong with the file and did about it ("" when nothing).
    const std::string& warning() const { return warning_; }
    // Rows a fresh run's file held before it was started anew.
    int64_t replaced_rows() const { return replaced_rows_; }

private:
    void keep_epochs_through(int64_t epochs_done);
    // Closes f; throws "WHAT 'PATH': reason" when a write or the close failed.
    void close_or_throw(std::FILE* f, const char* what) const;

    bool language_ = false;
    std::string path_;
    std::string header_;
    std::string warning_;
    int64_t replaced_rows_ = 0;
};

}  // namespace gputrain::train
