#include "train/tensorboard_writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "train/tfrecord.hpp"

namespace gputrain::train {
namespace {

double wall_time() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error("cannot create TensorBoard folder '" + dir + "': " + ec.message());
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    // TensorBoard finds files by "tfevents" in the name; the pid keeps two runs in one second apart.
    const std::string name = "events.out.tfevents." + std::to_string(static_cast<long long>(wall_time())) + "." +
                             host + "." + std::to_string(getpid());
    path_ = (std::filesystem::path(dir) / name).string();
    file_.reset(std::fopen(path_.c_str(), "wb"));
    if (!file_) throw Error("cannot write TensorBoard events '" + path_ + "': " + std::strerror(errno));
    append(file_version_event(wall_time()));
}

void TensorBoardWriter::append(const std::string& event) {
    const std::string record = tfrecord(event);
    if (std::fwrite(record.data(), 1, record.size(), file_.get()) != record.size() || std::fflush(file_.get()) != 0)
        throw Error("cannot write TensorBoard events '" + path_ + "': " + std::strerror(errno));
}

void TensorBoardWriter::write(const EpochRecord& r) {
    if (!file_) return;
    const double now = wall_time();
    auto scalar = [&](const char* tag, double value) { append(scalar_event(now, r.epoch, tag, static_cast<float>(value))); };
    scalar("loss", r.loss);
    scalar("accuracy", r.accuracy);
    if (r.has_validation) {
        scalar("val_loss", r.val_loss);
        scalar("val_accuracy", r.val_accuracy);
    }
    scalar("learning_rate", r.learning_rate);
    scalar("samples_per_second", r.samples_per_second);
}

}  // namespace gputrain::train
