#include "train/tensorboard_writer.hpp"

#include <cmath>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "train/tfrecord.hpp"

namespace gputrain::train {
namespace {

double wall_time() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// TensorBoard reads a folder's event files in name order, so a new file must
// sort after the existing ones even when a resume starts within the same second
// (or the clock went back): its seconds field is at least the newest one's + 1.
long long file_seconds(const std::filesystem::path& dir) {
    const std::string prefix = "events.out.tfevents.";
    long long seconds = static_cast<long long>(wall_time());
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(prefix, 0) != 0) continue;
        char* end = nullptr;
        const long long existing = std::strtoll(name.c_str() + prefix.size(), &end, 10);
        if (end != name.c_str() + prefix.size() && existing >= seconds) seconds = existing + 1;
    }
    return seconds;
}

}  // namespace

void TensorBoardWriter::EventFile::open(const std::string& dir, int64_t first_step) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error("cannot create TensorBoard folder '" + dir + "': " + ec.message());
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    // TensorBoard finds files by "tfevents" in the name; the pid keeps two runs in one second apart.
    const std::string name =
        "events.out.tfevents." + std::to_string(file_seconds(dir)) + "." + host + "." + std::to_string(getpid());
    path = (std::filesystem::path(dir) / name).string();
    file.reset(std::fopen(path.c_str(), "wb"));
    if (!file) throw Error("cannot write TensorBoard events '" + path + "': " + std::strerror(errno));
    append(file_version_event(wall_time()));
    append(session_start_event(wall_time(), first_step));
}

void TensorBoardWriter::EventFile::append(const std::string& event) {
    const std::string record = tfrecord(event);
    if (std::fwrite(record.data(), 1, record.size(), file.get()) != record.size() || std::fflush(file.get()) != 0)
        throw Error("cannot write TensorBoard events '" + path + "': " + std::strerror(errno));
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir, int64_t epochs_done, int64_t steps_done,
                                     const std::string& metric, const std::string& bits)
    : metric_(metric), bits_(bits) {
    if (dir.empty()) return;
    epochs_.open(dir, epochs_done + 1);
    steps_.open((std::filesystem::path(dir) / "steps").string(), steps_done + 1);
}

void TensorBoardWriter::write(const StepRecord& r) {
    if (!steps_.file) return;
    const double now = wall_time();
    auto scalar = [&](const char* tag, double value) {
        steps_.append(scalar_event(now, r.step, tag, static_cast<float>(value)));
    };
    scalar("batch/loss", r.loss);
    scalar(("batch/" + metric_).c_str(), r.metric);
    scalar("batch/learning_rate", r.learning_rate);
    scalar("batch/samples_per_second", r.samples_per_second);
}

void TensorBoardWriter::write(const EpochRecord& r) {
    if (!epochs_.file) return;
    const double now = wall_time();
    auto scalar = [&](const char* tag, double value) {
        epochs_.append(scalar_event(now, r.epoch, tag, static_cast<float>(value)));
    };
    scalar("loss", r.loss);
    scalar(metric_.c_str(), r.metric);
    if (r.has_validation) {
        scalar("val_loss", r.val_loss);
        scalar(("val_" + metric_).c_str(), r.val_metric);
    }
    if (!bits_.empty()) {
        scalar("ppl", std::exp(r.loss));
        scalar(bits_.c_str(), r.loss / std::log(2.0));
        if (r.has_validation) {
            scalar("val_ppl", std::exp(r.val_loss));
            scalar(("val_" + bits_).c_str(), r.val_loss / std::log(2.0));
        }
    }
    scalar("learning_rate", r.learning_rate);
    scalar("samples_per_second", r.samples_per_second);
}

}  // namespace gputrain::train
