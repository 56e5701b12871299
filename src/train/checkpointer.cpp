#include "train/checkpointer.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>

#include "build_config.hpp"
#include "checkpoint/json.hpp"
#include "checkpoint/safetensors.hpp"
#include "config/config_diff.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/utf8.hpp"
#include "nn/resolve_layers.hpp"

namespace fs = std::filesystem;

namespace gputrain::train {

namespace {

std::string number(double v) { return metadata_number(v); }

// The replica's buffers as the host sees them, one view per tensor, in a
// fixed order: host copies of a GPU's, the CPU's own memory (nothing copied:
// a checkpoint of a model near the machine's memory must not need as much again).
struct HostTensors {
    std::vector<std::vector<float>> storage;
    std::vector<checkpoint::TensorRef> refs;
};

HostTensors gather(Replica& r) {
    HostTensors out;
    nn::Model& model = r.model();
    const bool copies = r.backend().has_device_memory();
    const auto host_view = [&](const float* data, size_t count) -> const float* {
        if (!copies || count == 0) return data;
        std::vector<float> host(count);
        r.backend().copy_to_host(host.data(), data, count * sizeof(float));
        out.storage.push_back(std::move(host));
        return out.storage.back().data();
    };
    const auto slots = r.optimizer().state();
    out.storage.reserve(3 + slots.size());  // views into it stay valid
    const float* params = host_view(model.param_data(), model.param_count());
    const float* state = host_view(model.state_data(), model.state_count());
    std::vector<const float*> slot_data;
    for (const auto& slot : slots) slot_data.push_back(host_view(slot.data, model.param_count()));
    for (const auto& view : model.params()) out.refs.push_back({view.name, view.shape, params + view.offset});
    // Non-trainable tensors are named like parameters ("batch_norm/moving_mean").
    for (const auto& view : model.state()) out.refs.push_back({view.name, view.shape, state + view.offset});
    for (size_t s = 0; s < slots.size(); ++s)
        for (const auto& view : model.params())
            out.refs.push_back(
                {"optimizer/" + slots[s].name + "/" + view.name, view.shape, slot_data[s] + view.offset});
    // training.ema: the weights' moving average, "ema/<layer>/<param>".
    if (r.ema()) {
        const float* ema = host_view(r.ema(), model.param_count());
        for (const auto& view : model.params()) out.refs.push_back({"ema/" + view.name, view.shape, ema + view.offset});
    }
    return out;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

int64_t meta_int(const checkpoint::Contents& c, const std::string& path, const std::string& key) {
    return MetadataReader(c.metadata, path).whole(key);
}

// The resolved config a checkpoint stores: metadata "config", or
// "config_bytes" for one that is not UTF-8; "" when it stores neither.
std::string stored_config(const checkpoint::Contents& c, const std::string& path) {
    if (const auto it = c.metadata.find("config"); it != c.metadata.end()) return it->second;
    std::string bytes;
    if (const auto it = c.metadata.find("config_bytes"); it != c.metadata.end())
        if (!from_latin1_code_points(it->second, bytes))
            throw DataError(path + ": metadata 'config_bytes' holds a character past U+00FF, which no byte "
                                   "gives; the file is damaged");
    return bytes;
}

double meta_real(const checkpoint::Contents& c, const std::string& path, const std::string& key, double fallback,
                 bool finite = true) {
    return MetadataReader(c.metadata, path).real(key, fallback, finite);
}

}  // namespace

Checkpointer::Checkpointer(const config::RunConfig& cfg, const std::string& dir) : cfg_(cfg), dir_(dir) {}

MonitoredMetric Checkpointer::best_metric(bool has_validation) const {
    return MonitoredMetric::resolve(cfg_.checkpoint.monitor, cfg_.checkpoint.mode, has_validation);
}

std::string Checkpointer::path_for_epoch(int64_t epoch) const {
    char name[40];
    std::snprintf(name, sizeof name, "epoch-%03lld.safetensors", (long long)epoch);
    return (fs::path(dir_) / name).string();
}

void Checkpointer::write(const std::string& path, Replica& replica0, const TrainingState& state,
                         const EpochRecord& record, const Metadata& callbacks, const std::string& interrupted) {
    HostTensors tensors = gather(replica0);
    // A checkpoint is a promise that training can continue from it.
    for (const auto& ref : tensors.refs)
        for (size_t i = 0, n = static_cast<size_t>(shape_elements(ref.shape)); i < n; ++i)
            if (!std::isfinite(ref.data[i]))
                // Finite gradients can still overflow Adam's second moment (their squares) or the weights.
                throw Error("not writing '" + path + "' after epoch " + std::to_string(state.epochs_done) +
                            ": tensor '" + ref.name + "' holds " + (std::isnan(ref.data[i]) ? "NaN" : "Inf") +
                            " (a gradient or its square past float32's range: inputs or learning rate far too "
                            "large; check data.scale and optimizer.learning_rate); any previous checkpoint is left "
                            "as it was");
    std::map<std::string, std::string> meta{
        {"format", "gputrain-checkpoint/1"},
        {"gputrain_version", GPUTRAIN_VERSION},
        {"epoch", std::to_string(state.epochs_done)},
        {"global_step", std::to_string(state.global_step)},
        {"seed", std::to_string(cfg_.training.seed)},
        // The generator that shuffles the next epoch (data::epoch_order). Dropout
        // masks are counter-based on (seed, epoch, step, row), so together with the
        // epoch and step this is the whole random state of the run.
        {"rng_state", Rng(cfg_.training.seed).split(static_cast<uint64_t>(state.epochs_done)).serialize()},
        {"config_digest", cfg_.digest},
        {"optimizer", replica0.optimizer().type()},
        {"loss", number(record.loss)},
        {cfg_.metric(), number(record.metric)},
        {"learning_rate", number(record.learning_rate)},
    };
    // The whole resolved config: a checkpoint says how it was trained, and
    // evaluate/predict/--resume name what a later config changed. Metadata is
    // UTF-8 (safetensors' JSON): a config with other bytes (a Latin-1 path)
    // goes to "config_bytes", one code point a byte.
    if (checkpoint::json::is_valid_utf8(cfg_.resolved_yaml))
        meta["config"] = cfg_.resolved_yaml;
    else  // a Latin-1 path in it: each byte as a code point
        meta["config_bytes"] = to_latin1_code_points(cfg_.resolved_yaml);
    if (record.has_validation) {
        meta["val_loss"] = number(record.val_loss);
        meta["val_" + cfg_.metric()] = number(record.val_metric);
    }
    if (!state.tokenizer.empty()) {
        meta["tokenizer"] = state.tokenizer;
        meta["vocabulary"] = state.vocabulary;
    }
    if (!state.epoch_steps.empty()) meta["steps_per_epoch"] = optim::format_epoch_steps(state.epoch_steps);
    if (state.has_best) meta["best_value"] = number(state.best_value);
    if (state.has_best && !state.best_of.empty()) meta["best_of"] = state.best_of;
    for (const auto& [key, value] : callbacks) {
        if (meta.count(key)) throw Error("internal: a callback's metadata key '" + key + "' is the trainer's");
        meta[key] = value;
    }
    if (state.step_in_epoch > 0) {
        meta["step_in_epoch"] = std::to_string(state.step_in_epoch);
        meta["partial_loss_sum"] = number(state.partial_loss_sum);
        meta["partial_correct"] = number(state.partial_correct);
        meta["partial_samples"] = number(state.partial_samples);
    }
    if (state.loss_scale > 0) {
        meta["loss_scale"] = number(state.loss_scale);
        meta["loss_scale_good_steps"] = std::to_string(state.loss_scale_good_steps);
    }
    if (!interrupted.empty()) meta["interrupted_by"] = interrupted;
    checkpoint::save(path, tensors.refs, meta);
}

std::vector<std::string> Checkpointer::save_epoch(Replica& replica0, const TrainingState& state,
                                                  const EpochRecord& record, const Metadata& callbacks, bool is_best,
                                                  bool final_epoch) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw Error("cannot create checkpoint folder '" + dir_ + "': " + ec.message());
    std::vector<std::string> written;
    const int64_t every = cfg_.checkpoint.every_epochs;
    const bool last_epoch = final_epoch || state.epochs_done == cfg_.training.epochs;
    if (every > 0 && (state.epochs_done % every == 0 || last_epoch)) {
        written.push_back(path_for_epoch(state.epochs_done));
        write(written.back(), replica0, state, record, callbacks);
        prune_old_epochs(state.epochs_done);
    }
    written.push_back((fs::path(dir_) / "last.safetensors").string());
    write(written.back(), replica0, state, record, callbacks);
    if (is_best && cfg_.checkpoint.save_best) {
        written.push_back((fs::path(dir_) / "best.safetensors").string());
        write(written.back(), replica0, state, record, callbacks);
    }
    return written;
}

int64_t Checkpointer::best_file_epoch() const {
    const fs::path best = fs::path(dir_) / "best.safetensors";
    std::error_code ec;
    if (!fs::exists(best, ec)) return 0;
    try {
        const auto contents = checkpoint::load(best.string(), [](const std::string&) { return false; });
        return meta_int(contents, best.string(), "epoch");
    } catch (const std::exception&) {
        return 0;  // an unreadable best file is reported when someone loads it, not here
    }
}

std::string Checkpointer::last_path() const { return (fs::path(dir_) / "last.safetensors").string(); }

std::string Checkpointer::save_interrupted(Replica& replica0, const TrainingState& state,
                                           const EpochRecord& partial, const Metadata& callbacks,
                                           const std::string& signal) {
    const std::string path = last_path();
    write(path, replica0, state, partial, callbacks, signal);
    return path;
}

void Checkpointer::prepare(size_t checkpoint_bytes) const {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw Error("cannot create checkpoint folder '" + dir_ + "': " + ec.message() + "; set checkpoint.dir or --run-dir to a writable folder");
    // Leftovers of a killed run: temporary files whose writer is gone. A live
    // writer's (another process training into the same folder) stays.
    static const std::regex temporary(".*\\.safetensors\\.tmp-([0-9]+)");
    std::smatch match;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
        const std::string name = entry.path().filename().string();
        if (!std::regex_match(name, match, temporary)) continue;
        const long long pid = std::strtoll(match[1].str().c_str(), nullptr, 10);
        const bool writer_alive = pid > 0 && pid <= INT32_MAX && pid != ::getpid() &&
                                  (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
        if (!writer_alive) fs::remove(entry.path(), ec);
    }
    const fs::path probe = fs::path(dir_) / (".write-test-" + std::to_string(::getpid()));
    {
        std::FILE* f = std::fopen(probe.c_str(), "w");
        const bool ok = f && std::fputs("ok\n", f) >= 0 && std::fclose(f) == 0;
        if (!ok) {
            const std::string why = std::strerror(errno);
            fs::remove(probe, ec);
            throw Error("cannot write in checkpoint folder '" + dir_ + "': " + why +
                        "; set checkpoint.dir or --run-dir to a writable folder");
        }
    }
    fs::remove(probe, ec);
    const fs::space_info space = fs::space(dir_, ec);
    // The new file is complete before it replaces the old one: room for two.
    if (!ec && space.available < 2 * checkpoint_bytes) {
        char text[200];
        std::snprintf(text, sizeof text,
                      "%.3g MB free, but writing a checkpoint of %.3g MB needs %.3g MB (the new file is complete "
                      "before it replaces the previous one)",
                      space.available / 1e6, checkpoint_bytes / 1e6, 2.0 * checkpoint_bytes / 1e6);
        throw Error("checkpoint folder '" + dir_ + "': " + text + "; free some space or set checkpoint.dir elsewhere");
    }
}

size_t checkpoint_bytes(Replica& replica0) {
    const size_t tensors = 1 + replica0.optimizer().state().size();
    return tensors * replica0.model().param_count() * sizeof(float) + (64u << 10);
}

namespace {

// The epoch-NNN.safetensors files of `dir` by epoch number, oldest first
// (names are not fixed-width past epoch 999: "epoch-1000" sorts before "epoch-999").
std::vector<std::pair<int64_t, std::string>> epoch_files(const std::string& dir) {
    static const std::regex pattern("epoch-([0-9]{1,18})\\.safetensors");
    std::vector<std::pair<int64_t, std::string>> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        std::smatch m;
        const std::string name = entry.path().filename().string();
        if (std::regex_match(name, m, pattern)) found.emplace_back(std::stoll(m[1].str()), entry.path().string());
    }
    std::sort(found.begin(), found.end());
    return found;
}

}  // namespace

std::vector<std::string> Checkpointer::files_past(int64_t epoch) const {
    std::vector<std::string> names;
    for (const auto& [n, path] : epoch_files(dir_))
        if (n > epoch) names.push_back(fs::path(path).filename().string());
    const fs::path best = fs::path(dir_) / "best.safetensors";
    std::error_code ec;
    if (fs::exists(best, ec)) {
        try {
            const auto contents = checkpoint::load(best.string(), [](const std::string&) { return false; });
            const auto it = contents.metadata.find("epoch");
            if (it != contents.metadata.end() && std::stoll(it->second) > epoch) names.push_back("best.safetensors");
        } catch (const std::exception&) {
            // An unreadable best file is reported when someone loads it, not here.
        }
    }
    return names;
}

void Checkpointer::prune_old_epochs(int64_t epoch) const {
    const int64_t keep = cfg_.checkpoint.keep_last;
    if (keep <= 0) return;
    std::vector<std::pair<int64_t, std::string>> epochs = epoch_files(dir_);
    std::erase_if(epochs, [&](const auto& e) { return e.first > epoch; });
    for (size_t i = 0; i + static_cast<size_t>(keep) < epochs.size(); ++i) fs::remove(epochs[i].second);
}

TrainingState restore(const std::string& path, std::vector<std::unique_ptr<Replica>>& replicas,
                      const config::RunConfig& cfg, bool with_optimizer, std::string* warning) {
    Replica& first = *replicas[0];
    const nn::Model& model = first.model();
    // Weights alone: the optimizer's tensors (twice the weights under Adam)
    // stay on disk. By the model's own names (a layer may be called "optimizer").
    std::set<std::string> model_tensors;
    for (const auto& view : model.params()) model_tensors.insert(view.name);
    for (const auto& view : model.state()) model_tensors.insert(view.name);
    // training.ema with evaluate: evaluate and predict take the average ("ema/...") for the weights.
    const bool ema_for_weights = !with_optimizer && cfg.training.ema.enabled && cfg.training.ema.evaluate;
    const checkpoint::Contents contents = checkpoint::load(path, [&](const std::string& name) {
        return with_optimizer || model_tensors.count(name) > 0 || (ema_for_weights && name.rfind("ema/", 0) == 0);
    });
    const bool has_ema = !model.params().empty() && contents.find("ema/" + model.params()[0].name) != nullptr;

    // What the config the checkpoint stores says was different: the model and
    // optimizer keys that decide its tensors ("" when it stores none or they agree).
    const auto trained_with = [&]() -> std::string {
        const std::string stored = stored_config(contents, path);
        if (stored.empty()) return "";
        config::ConfigChanges diff = config::changed_keys(stored, cfg.resolved_yaml, nn::resolved_again);
        std::erase_if(diff.changes, [](const std::string& c) {
            return c.rfind("model.", 0) != 0 && c.rfind("optimizer.", 0) != 0;
        });
        return diff.changes.empty() ? "" : "; the config it was trained with differs: " + diff.text(4);
    };
    auto checked = [&](const std::string& name, const Shape& shape) -> const checkpoint::Tensor& {
        const checkpoint::Tensor* t = contents.find(name);
        if (!t) {
            const std::string why = trained_with();
            if (!model_tensors.count(name)) {  // an optimizer slot: the weights may be fine
                const auto it = contents.metadata.find("optimizer");
                throw DataError(path + ": tensor '" + name + "' is missing: the checkpoint holds no such optimizer "
                                "state (it was written with optimizer " +
                                (it != contents.metadata.end() ? it->second : std::string("unknown")) + ", now " +
                                first.optimizer().type() + ")" + why + "; resume with the optimizer it was written "
                                "with");
            }
            throw DataError(path + ": tensor '" + name + "' of the model is missing from the checkpoint" +
                            (why.empty() ? "; it was written for a different model" : why));
        }
        if (t->shape != shape)
            throw DataError(path + ": tensor '" + name + "' has shape " + shape_text(t->shape) +
                            " but the model expects " + shape_text(shape) + trained_with());
        // A checkpoint is a promise that training can continue from it (written ones are checked too).
        for (size_t i = 0; i < t->data.size(); ++i)
            if (!std::isfinite(t->data[i]))
                throw DataError(path + ": tensor '" + name + "' holds " + (std::isnan(t->data[i]) ? "NaN" : "Inf") +
                                " at index " + std::to_string(i) + "; the file is damaged, use an earlier checkpoint");
        return *t;
    };

    // Every tensor is checked before any replica is written; then each goes
    // straight from the file's contents to its place (no second host copy).
    struct Placed {
        const checkpoint::Tensor* tensor;
        int buffer;  // 0 params, 1 state, 2 + s optimizer slot s
        size_t offset;
    };
    std::vector<Placed> placed;
    constexpr int kEma = -1;
    const std::string weights_prefix = ema_for_weights && has_ema ? "ema/" : "";
    for (const auto& view : model.params())
        placed.push_back({&checked(weights_prefix + view.name, view.shape), 0, view.offset});
    for (const auto& view : model.state()) placed.push_back({&checked(view.name, view.shape), 1, view.offset});
    const auto first_slots = with_optimizer ? first.optimizer().state() : std::vector<optim::StateSlot>{};
    const size_t slot_count = first_slots.size();
    for (size_t s = 0; s < slot_count; ++s)
        for (const auto& view : model.params())
            placed.push_back({&checked("optimizer/" + first_slots[s].name + "/" + view.name, view.shape),
                              static_cast<int>(2 + s), view.offset});
    // A resumed training.ema run: the average from the file; a file without one
    // (EMA turned on in a resume) starts it from the weights.
    const bool ema_from_file = with_optimizer && first.ema() && has_ema;
    if (ema_from_file)
        for (const auto& view : model.params())
            placed.push_back({&checked("ema/" + view.name, view.shape), kEma, view.offset});
    for (auto& r : replicas) {
        const auto slots = slot_count ? r->optimizer().state() : std::vector<optim::StateSlot>{};
        for (const Placed& p : placed) {
            float* base = p.buffer == kEma ? r->ema()
                          : p.buffer == 0  ? r->model().param_data()
                          : p.buffer == 1  ? r->model().state_data()
                                           : slots[static_cast<size_t>(p.buffer - 2)].data;
            r->backend().copy_to_device(base + p.offset, p.tensor->data.data(), p.tensor->data.size() * sizeof(float));
        }
        if (with_optimizer && r->ema() && !ema_from_file)
            r->backend().copy(r->ema(), r->model().param_data(), r->model().param_count() * sizeof(float));
    }

    TrainingState st;
    st.ema_weights = !weights_prefix.empty();
    st.epochs_done = meta_int(contents, path, "epoch");
    st.global_step = meta_int(contents, path, "global_step");
    if (contents.metadata.count("step_in_epoch")) {
        st.step_in_epoch = meta_int(contents, path, "step_in_epoch");
        st.partial_loss_sum = meta_real(contents, path, "partial_loss_sum", 0.0);
        st.partial_correct = meta_real(contents, path, "partial_correct", 0.0);
        st.partial_samples = meta_real(contents, path, "partial_samples", 0.0);
        // Sums over the epoch's first steps, each a whole global batch: a
        // count of samples that the steps divide, correct ones among them, a
        // loss that is not negative.
        const double steps = static_cast<double>(st.step_in_epoch), samples = st.partial_samples;
        const auto whole = [](double v) { return v >= 0 && v == std::floor(v); };
        if (st.step_in_epoch > 0 &&
            !(whole(samples) && samples >= steps && std::fmod(samples, steps) == 0 && whole(st.partial_correct) &&
              st.partial_correct <= samples && st.partial_loss_sum >= 0))
            throw DataError(path + ": the interrupted epoch's metadata disagree (step_in_epoch " +
                            std::to_string(st.step_in_epoch) + ", partial_samples " + number(samples) +
                            ", partial_correct " + number(st.partial_correct) + ", partial_loss_sum " +
                            number(st.partial_loss_sum) +
                            "); the file is damaged: resume from an epoch-NNN.safetensors checkpoint instead");
    }
    if (contents.metadata.count("best_value")) {
        st.has_best = true;
        st.best_value = meta_real(contents, path, "best_value", 0.0, /*finite=*/false);
        // A NaN best (a diverged first epoch) is beaten by nothing: no best yet.
        if (std::isnan(st.best_value)) st.has_best = false;
        if (const auto it = contents.metadata.find("best_of"); it != contents.metadata.end()) st.best_of = it->second;
        const std::string monitored = st.best_of.substr(0, st.best_of.find(' '));
        const auto own = contents.metadata.find(monitored);
        st.holds_best = st.has_best && !monitored.empty() && own != contents.metadata.end() &&
                        own->second == contents.metadata.at("best_value");
    }
    if (const auto it = contents.metadata.find("steps_per_epoch"); it != contents.metadata.end()) {
        const std::string problem = optim::parse_epoch_steps(it->second, st.epoch_steps);
        if (!problem.empty())
            throw DataError(path + ": metadata 'steps_per_epoch' (" + problem +
                            "); the file is damaged or not a gputrain checkpoint");
        // The steps of the epochs done, and of the interrupted one so far, are the global step.
        const double counted = optim::steps_before_epoch(st.epoch_steps, st.epochs_done) +
                               static_cast<double>(st.step_in_epoch);
        const double current = optim::steps_before_epoch(st.epoch_steps, st.epochs_done + 1) -
                                optim::steps_before_epoch(st.epoch_steps, st.epochs_done);
        if (counted != static_cast<double>(st.global_step) ||
            (st.step_in_epoch > 0 && static_cast<double>(st.step_in_epoch) >= current))
            throw DataError(path + ": metadata 'steps_per_epoch' (" + it->second + ") disagrees with 'epoch' (" +
                            std::to_string(st.epochs_done) + "), 'global_step' (" + std::to_string(st.global_step) +
                            ") and 'step_in_epoch' (" + std::to_string(st.step_in_epoch) +
                            "); the file is damaged: resume from another checkpoint");
    }
    if (contents.metadata.count("loss_scale")) {
        st.loss_scale = meta_real(contents, path, "loss_scale", 0.0);
        st.loss_scale_good_steps = meta_int(contents, path, "loss_scale_good_steps");
    }
    st.config_yaml = stored_config(contents, path);
    st.metadata = contents.metadata;
    if (warning) {
        auto it = contents.metadata.find("config_digest");
        // A checkpoint of an earlier gputrain (which left layer defaults out of the digest) may match the other one.
        if (it != contents.metadata.end() && it->second != cfg.digest && it->second != cfg.digest_of_layers_as_given) {
            std::string what = "digest " + it->second + ", now " + cfg.digest;
            config::ConfigChanges diff;
            if (!st.config_yaml.empty()) {
                // The keys, where the checkpoint has its config (more epochs is what a resume is for).
                diff = config::changed_keys(st.config_yaml, cfg.resolved_yaml, nn::resolved_again);
                config::drop_same_run_dir(diff, st.config_yaml, cfg.run_dir);
                std::erase_if(diff.changes, [](const std::string& c) { return c.rfind("training.epochs:", 0) == 0; });
                if (diff.readable && !diff.changes.empty()) what = diff.text();
            }
            // A digest of a config that resolves to the same one now (an earlier
            // gputrain left layer defaults out) is no change.
            if (!diff.readable || !diff.changes.empty() || st.config_yaml.empty())
                *warning = path + " was written with a different config (" + what +
                           "); continuing with the current config";
        }
    }
    return st;
}

int64_t checkpoint_epochs_done(const std::string& path) {
    try {
        const auto contents = checkpoint::load(path, [](const std::string&) { return false; });
        return meta_int(contents, path, "epoch");
    } catch (const std::exception&) {
        return -1;
    }
}

std::string checkpoint_config(const std::string& path) {
    const auto contents = checkpoint::load(path, [](const std::string&) { return false; });
    return stored_config(contents, path);
}

std::string latest_checkpoint(const std::string& dir) {
    const fs::path last = fs::path(dir) / "last.safetensors";
    if (fs::exists(last)) return last.string();
    const auto epochs = epoch_files(dir);
    return epochs.empty() ? std::string() : epochs.back().second;
}

std::vector<std::string> run_checkpoints(const std::string& dir) {
    static const std::regex pattern("(epoch-[0-9]+|last|best)\\.safetensors");
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        if (std::regex_match(entry.path().filename().string(), pattern)) found.push_back(entry.path().string());
    std::sort(found.begin(), found.end());
    return found;
}

}  // namespace gputrain::train
