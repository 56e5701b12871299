#include "train/init_from.hpp"

#include <cmath>
#include <filesystem>
#include <map>

#include "checkpoint/safetensors.hpp"
#include "config/config_source.hpp"
#include "core/error.hpp"
#include "core/suggest.hpp"

namespace gputrain::train {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string out = "[";
    for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

// "a, b, c and 4 more": a long list kept to one line.
std::string some_names(const std::vector<std::string>& names, size_t most = 8) {
    std::vector<std::string> shown(names.begin(), names.begin() + static_cast<long>(std::min(most, names.size())));
    std::string out = join_names(shown);
    if (names.size() > most) out += " and " + std::to_string(names.size() - most) + " more";
    return out;
}

// The layer a tensor belongs to: its name up to the last '/' ("stage2/block1/conv2d/kernel").
std::string layer_of(const std::string& tensor) {
    const size_t slash = tensor.rfind('/');
    return slash == std::string::npos ? tensor : tensor.substr(0, slash);
}

bool is_optimizer_slot(const std::string& name) { return name.rfind("optimizer/", 0) == 0; }

}  // namespace

InitReport init_from_file(const config::RunConfig& cfg, std::vector<std::unique_ptr<Replica>>& replicas) {
    const config::ModelConfig& mc = cfg.model;
    const std::string& path = mc.init_from;
    const auto config_error = [&](const std::string& place, const std::string& key, const std::string& problem,
                                  const std::string& hint) {
        return ConfigError(config::config_message(place.empty() ? cfg.source_file : place, key, problem, hint));
    };
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw config_error(mc.init_from_place, "model.init_from",
                           "'" + path + "' " + (std::filesystem::exists(path, ec) ? "is not a file" : "does not exist"),
                           "give the path of a checkpoint or safetensors file, e.g. runs/mnist/best.safetensors");

    // The model's tensors, by name: trainable ones and state.
    nn::Model& model = replicas[0]->model();
    struct Target {
        const nn::ParamView* view;
        bool state;
    };
    std::map<std::string, Target> targets;
    std::vector<std::string> model_names;  // in the model's order
    for (const auto& v : model.params()) {
        targets[v.name] = {&v, false};
        model_names.push_back(v.name);
    }
    for (const auto& v : model.state()) {
        targets[v.name] = {&v, true};
        model_names.push_back(v.name);
    }

    std::set<std::string> mapped_from;
    for (const auto& [from, to] : mc.init_map) mapped_from.insert(from);
    checkpoint::Contents contents;
    try {
        // A checkpoint's optimizer slots (twice the weights under Adam) stay on disk.
        contents = checkpoint::load(path, [&](const std::string& name) {
            return !is_optimizer_slot(name) || mapped_from.count(name) > 0;
        });
    } catch (const DataError& e) {
        const std::string what = e.what();
        const bool dtype = what.find("only F32 is supported") != std::string::npos;
        throw DataError("model.init_from: " + what +
                        (dtype ? " (convert it first, e.g. with safetensors.numpy: {k: v.astype('float32')})" : ""));
    }
    std::vector<std::string> file_names;
    for (const auto& t : contents.tensors) file_names.push_back(t.name);

    // The model's name -> the file's tensor: init_map's pairs first, then equal names.
    std::map<std::string, const checkpoint::Tensor*> source;
    std::map<std::string, std::string> mapped_by;  // model name -> the file name init_map gave it
    for (const auto& [from, to] : mc.init_map) {
        const checkpoint::Tensor* t = contents.find(from);
        if (!t)
            throw config_error(mc.init_map_place, "model.init_map",
                               "'" + from + "' is not a tensor of " + path + did_you_mean(from, file_names),
                               "its tensors: " + some_names(file_names));
        if (!targets.count(to))
            throw config_error(mc.init_map_place, "model.init_map",
                               "'" + to + "' (for the file's '" + from + "') is not a tensor of the model" +
                                   did_you_mean(to, model_names),
                               "the model's tensors: " + some_names(model_names) + " (gputrain summary lists them)");
        if (mapped_by.count(to))
            throw config_error(mc.init_map_place, "model.init_map",
                               "'" + mapped_by[to] + "' and '" + from + "' both map to '" + to + "'",
                               "map one tensor of the file to each tensor of the model");
        source[to] = t;
        mapped_by[to] = from;
    }
    for (const auto& t : contents.tensors)
        if (!mapped_from.count(t.name) && targets.count(t.name) && !source.count(t.name)) source[t.name] = &t;

    // init_skip: a tensor, a layer, or a scope (everything under "NAME/").
    std::set<std::string> skip;
    for (const std::string& entry : mc.init_skip) {
        bool any = false;
        for (const std::string& name : model_names)
            if (name == entry || name.rfind(entry + "/", 0) == 0) {
                skip.insert(name);
                any = true;
            }
        if (!any) {
            for (size_t i = 0; i < model.layer_count(); ++i)
                if (model.layer(i).name() == entry)
                    throw config_error(mc.init_skip_place, "model.init_skip",
                                       "layer '" + entry + "' (" + model.layer(i).type() + ") has no weights to skip",
                                       "remove it");
            std::vector<std::string> layers;
            for (size_t i = 0; i < model.layer_count(); ++i) layers.push_back(model.layer(i).name());
            std::vector<std::string> candidates = layers;
            candidates.insert(candidates.end(), model_names.begin(), model_names.end());
            throw config_error(mc.init_skip_place, "model.init_skip",
                               "'" + entry + "' is no layer or tensor of the model" + did_you_mean(entry, candidates),
                               "name layers with weights, e.g. " + (model_names.empty() ? std::string("dense")
                                                                                        : layer_of(model_names.back())));
        }
    }

    for (const auto& [to, from] : mapped_by)
        if (skip.count(to))
            throw config_error(mc.init_map_place, "model.init_map",
                               "maps the file's '" + from + "' to '" + to + "', which model.init_skip keeps at its "
                               "initializer",
                               "remove one of the two");

    // Every tensor checked before any replica is written.
    InitReport report;
    std::vector<std::string> missing;
    std::map<std::string, bool> layer_complete;  // layer -> all its tensors loaded
    std::set<const checkpoint::Tensor*> used;
    for (const std::string& name : model_names) {
        const Target& target = targets.at(name);
        const std::string layer = layer_of(name);
        if (!layer_complete.count(layer)) layer_complete[layer] = true;
        if (skip.count(name)) {
            report.skipped.push_back(name);
            layer_complete[layer] = false;
            continue;
        }
        const auto it = source.find(name);
        if (it == source.end()) {
            missing.push_back(name);
            continue;
        }
        const checkpoint::Tensor& t = *it->second;
        const std::string from = t.name == name ? "'" + name + "'" : "'" + t.name + "' (mapped to '" + name + "')";
        if (t.shape != target.view->shape)
            throw DataError("model.init_from: " + path + ": tensor " + from + " has shape " + shape_text(t.shape) +
                            " but the model's is " + shape_text(target.view->shape) +
                            "; keep the model's initializer for its layer (model.init_skip: [" + layer + "]) or map "
                            "another tensor to it (model.init_map)");
        for (size_t i = 0; i < t.data.size(); ++i)
            if (!std::isfinite(t.data[i]))
                throw DataError("model.init_from: " + path + ": tensor " + from + " holds " +
                                (std::isnan(t.data[i]) ? "NaN" : "Inf") + " at index " + std::to_string(i) +
                                "; the file is damaged, use another checkpoint");
        used.insert(&t);
    }
    if (!missing.empty()) {
        // A head tied to its embedding in the file (tie_weights) stores no kernel: its kernel is an
        // embedding table transposed, which init_map cannot turn.
        std::string tied;
        for (const std::string& name : missing) {
            const Shape& want = targets.at(name).view->shape;
            if (!name.ends_with("/kernel") || want.size() != 2) continue;
            for (const auto& t : contents.tensors)
                if (t.name.ends_with("/embeddings") && t.shape.size() == 2 && t.shape[0] == want[1] &&
                    t.shape[1] == want[0]) {
                    tied = " (the file's " + t.name + " is " + name + " transposed: its head was tied to the "
                           "embedding; tie this model's too, tie_weights on '" + layer_of(name) + "')";
                    break;
                }
            if (!tied.empty()) break;
        }
        throw DataError("model.init_from: " + path + " lacks " + std::to_string(missing.size()) + " tensor" +
                        (missing.size() == 1 ? "" : "s") + " of the model: " + some_names(missing) + tied +
                        "; keep their initializers with model.init_skip (e.g. init_skip: [" + layer_of(missing[0]) +
                        "]) or name the file's tensors for them in model.init_map (the file has: " +
                        some_names(file_names, 6) + ")");
    }

    for (auto& r : replicas) {
        nn::Model& m = r->model();
        for (const std::string& name : model_names) {
            const auto it = source.find(name);
            if (skip.count(name) || it == source.end()) continue;
            const Target& target = targets.at(name);
            float* base = target.state ? m.state_data() : m.param_data();
            r->backend().copy_to_device(base + target.view->offset, it->second->data.data(),
                                        it->second->data.size() * sizeof(float));
        }
    }
    report.tensors = used.size();
    for (const auto& [layer, complete] : layer_complete)
        if (complete) report.layers.insert(layer);
    for (const auto& t : contents.tensors)
        if (!used.count(&t) && !is_optimizer_slot(t.name)) report.unused.push_back(t.name);
    return report;
}

std::string init_summary_note(const config::RunConfig& cfg, const InitReport& report) {
    std::string out = "+ weights from " + cfg.model.init_from + " (model.init_from: " +
                      std::to_string(report.tensors) + " tensor" + (report.tensors == 1 ? "" : "s") + ")\n";
    if (!report.skipped.empty())
        out += "  left at their initializers (model.init_skip): " + some_names(report.skipped) + "\n";
    if (!report.unused.empty())
        out += "  not used from the file: " + some_names(report.unused) + "\n";
    return out;
}

}  // namespace gputrain::train
