#include "train/run_dir.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "config/config_diff.hpp"
#include "core/error.hpp"
#include "nn/resolve_layers.hpp"
#include "train/checkpointer.hpp"

namespace fs = std::filesystem;

namespace gputrain::train {

EarlierRun find_earlier_run(const config::RunConfig& cfg) {
    EarlierRun earlier;
    earlier.checkpoints = run_checkpoints(cfg.checkpoint.dir);
    if (earlier.checkpoints.empty()) return earlier;
    const auto collect = [&earlier](const fs::path& dir, const std::string& prefix, const std::string& suffix) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(dir, ec)) {
            const std::string name = entry.path().filename().string();
            if (name.rfind(prefix, 0) == 0 && name.size() >= suffix.size() &&
                name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 && entry.is_regular_file(ec))
                earlier.logs.push_back(entry.path().string());
        }
    };
    collect(fs::path(cfg.checkpoint.dir) / "tensorboard", "events.out.tfevents.", "");
    collect(fs::path(cfg.checkpoint.dir) / "tensorboard" / "steps", "events.out.tfevents.", "");
    collect(cfg.run_dir, "config.previous-", ".yaml");
    return earlier;
}

void refuse_earlier_run(const EarlierRun& earlier, const config::RunConfig& cfg) {
    if (earlier.checkpoints.empty()) return;
    std::string names;
    for (size_t i = 0; i < earlier.checkpoints.size() && i < 3; ++i)
        names += (i ? ", " : "") + fs::path(earlier.checkpoints[i]).filename().string();
    if (earlier.checkpoints.size() > 3) names += " and " + std::to_string(earlier.checkpoints.size() - 3) + " more";
    throw ConfigError("'" + cfg.checkpoint.dir + "' holds the checkpoints of an earlier run (" + names +
                      "); continue that run with --resume, start afresh there with --overwrite (deletes them), "
                      "or give another --run-dir");
}

void clear_earlier_run(const EarlierRun& earlier, const config::RunConfig& cfg) {
    if (earlier.checkpoints.empty()) return;
    for (const auto& path : earlier.checkpoints) {
        std::error_code ec;
        fs::remove(path, ec);
        if (ec) throw Error("--overwrite: cannot delete '" + path + "': " + ec.message());
    }
    for (const auto& path : earlier.logs) {
        std::error_code ec;
        fs::remove(path, ec);
    }
    const size_t n = earlier.checkpoints.size(), logs = earlier.logs.size();
    spdlog::info("--overwrite: deleted the earlier run's {} checkpoint{}{} in {}", n, n == 1 ? "" : "s",
                 logs == 0 ? std::string()
                           : " and " + std::to_string(logs) + " TensorBoard or config file" + (logs == 1 ? "" : "s"),
                 cfg.checkpoint.dir);
}

fs::path free_previous_config(const fs::path& dir) {
    fs::path kept;
    for (int n = 1; kept.empty() || fs::exists(kept); ++n)
        kept = dir / ("config.previous-" + std::to_string(n) + ".yaml");
    return kept;
}

bool keep_previous_config(const fs::path& path, const config::RunConfig& cfg) {
    std::ifstream in(path);
    if (!in) return false;
    const std::string before((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    config::ConfigChanges diff = config::changed_keys(before, cfg.resolved_yaml, nn::resolved_again);
    config::drop_same_run_dir(diff, before, cfg.run_dir);
    // More epochs (or another early stopping: more patience) is what a resume
    // is for, as the digest also says.
    std::erase_if(diff.changes, [](const std::string& c) {
        return c.rfind("training.epochs:", 0) == 0 || c.rfind("early_stopping.", 0) == 0 ||
               c.rfind("early_stopping:", 0) == 0;
    });
    if (diff.readable && diff.changes.empty()) return false;
    const fs::path kept = free_previous_config(path.parent_path());
    std::error_code ec;
    fs::rename(path, kept, ec);
    if (ec) throw Error("cannot keep the earlier config '" + path.string() + "' as '" + kept.string() + "': " +
                        ec.message());
    if (!diff.readable)
        spdlog::warn("warning: --resume: the run dir's config.yaml is not a readable config; it is kept as {}",
                     kept.string());
    else
        spdlog::warn("warning: --resume: the config differs from the one this run dir was trained with ({}); the "
                     "earlier one is kept as {}",
                     diff.text(), kept.string());
    return true;
}

bool write_resolved_config(const config::RunConfig& cfg, bool resuming) {
    const fs::path path = fs::path(cfg.run_dir) / "config.yaml";
    const bool reported = resuming && keep_previous_config(path, cfg);
    std::ofstream out(path);
    if (!out) throw Error("cannot write '" + path.string() + "': " + std::strerror(errno));
    out << "# Resolved by gputrain from " << cfg.source_file << " (defaults filled in)\n" << cfg.resolved_yaml << "\n";
    out.close();
    if (!out) throw Error("cannot write '" + path.string() + "': " + std::strerror(errno));
    spdlog::info("Resolved config (every default filled in): {}", path.string());
    return reported;
}

void NewRunDir::create(const std::string& dir) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) dir_ = dir;
    fs::create_directories(dir, ec);
    if (ec) throw Error("cannot create run dir '" + dir + "': " + ec.message());
}

NewRunDir::~NewRunDir() {
    if (dir_.empty() || kept_) return;
    std::error_code ec;
    fs::remove(dir_ / lock_file_, ec);
    fs::remove(dir_, ec);  // only when empty: nothing else is ever removed
}

}  // namespace gputrain::train
